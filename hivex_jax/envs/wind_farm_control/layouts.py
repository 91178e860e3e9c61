"""Real offshore wind farm layouts for Wind Farm Control (patterns 9 and 10; HIVEX's nine are 0-8).

Coordinates are the public ones shipped with DTU's PyWake (py_wake/examples/data/hornsrev1.py and
lillgrund.py, UTM zone 32N / 33N, metres). Each layout is stored relative to its bounding-box centre
in rotor diameters of its *own* turbine (Horns Rev 1: Vestas V80, D = 80 m; Lillgrund: Siemens
SWT-2.3-93, D = 93 m), so that placed with our reference turbine (NREL 5 MW, D = 125.88 m) the farm
keeps its spacing in diameters (7 D at Horns Rev 1, 3.3 D x 4.3 D at Lillgrund), which sets the wakes.
x = east, second coordinate = north.
"""

from __future__ import annotations

import numpy as np

REAL_FARM_NAMES = ("Horns Rev 1", "Lillgrund")

#: Horns Rev 1 (80 turbines): 10 columns 560 m apart to the east; within a column 8 turbines, each
#: 68.3 m east and 555.9 m south of the previous one (7 D rows, rotated ~7 deg). Generated from these
#: four numbers, the grid reproduces PyWake's published UTM coordinates to within 1 m.
HORNS_REV_1_ORIGIN = (423974.0, 6151447.0)  # turbine 1, UTM 32N
HORNS_REV_1_COLUMN_STEP = (560.0, 0.0)
HORNS_REV_1_ROW_STEP = (68.2857, -555.857)
HORNS_REV_1_DIAMETER = 80.0

#: Lillgrund (48 turbines, irregular: two gaps in the middle), UTM 33N, as published in PyWake.
LILLGRUND_X = (
    361469, 361203, 360936, 360670, 360404, 360137, 359871, 361203, 360936, 360670, 360404, 360137,
    359871, 359604, 359338, 360936, 360670, 360404, 360137, 359871, 359604, 359338, 359071, 360670,
    360404, 360137, 359871, 359338, 359071, 358805, 360390, 360137, 359871, 359604, 359071, 358805,
    359871, 359604, 359338, 359071, 358805, 359604, 359338, 359071, 358805, 359338, 359071, 358805,
)  # fmt: skip
LILLGRUND_Y = (
    6154543, 6154244, 6153946, 6153648, 6153349, 6153051, 6152753, 6154695, 6154396, 6154098,
    6153800, 6153501, 6153203, 6152905, 6152606, 6154847, 6154548, 6154250, 6153952, 6153653,
    6153355, 6153057, 6152758, 6154999, 6154701, 6154402, 6154104, 6153507, 6153209, 6152910,
    6155136, 6154853, 6154554, 6154256, 6153659, 6153361, 6155005, 6154706, 6154408, 6154110,
    6153811, 6155157, 6154858, 6154560, 6154262, 6155309, 6155010, 6154712,
)  # fmt: skip
LILLGRUND_DIAMETER = 93.0


def horns_rev_1_utm() -> np.ndarray:
    """f64[80, 2] UTM coordinates (m), column by column (west to east), north to south in a column."""
    col, row = np.divmod(np.arange(80), 8)
    origin = np.asarray(HORNS_REV_1_ORIGIN)
    return (
        origin
        + col[:, None] * np.asarray(HORNS_REV_1_COLUMN_STEP)
        + row[:, None] * np.asarray(HORNS_REV_1_ROW_STEP)
    )


def lillgrund_utm() -> np.ndarray:
    """f64[48, 2] UTM coordinates (m)."""
    return np.stack([np.asarray(LILLGRUND_X, float), np.asarray(LILLGRUND_Y, float)], axis=-1)


def _centred_in_diameters(utm: np.ndarray, diameter: float) -> np.ndarray:
    centre = (utm.min(axis=0) + utm.max(axis=0)) / 2
    return (utm - centre) / diameter


def real_farm_in_diameters(index: int) -> np.ndarray:
    """f64[N, 2] layout `index` (0 Horns Rev 1, 1 Lillgrund), centred, in its own rotor diameters."""
    if index == 0:
        return _centred_in_diameters(horns_rev_1_utm(), HORNS_REV_1_DIAMETER)
    return _centred_in_diameters(lillgrund_utm(), LILLGRUND_DIAMETER)


def fit_to_agent_count(layout: np.ndarray, num_agents: int, gap_diameters: float = 10.0) -> np.ndarray:
    """f32[num_agents, 2]: the farm's first `num_agents` turbines; when more agents than turbines, copies
    of the farm placed east of it `gap_diameters` apart (a neighbouring farm), so nothing overlaps."""
    width = layout[:, 0].max() - layout[:, 0].min() + gap_diameters
    copies = -(-num_agents // layout.shape[0])
    tiled = np.concatenate([layout + np.asarray([c * width, 0.0]) for c in range(copies)])[:num_agents]
    return (tiled - (tiled.min(axis=0) + tiled.max(axis=0)) / 2).astype(np.float32)
