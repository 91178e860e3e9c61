"""`hivex world export | show | fields`."""

from __future__ import annotations

import json

import numpy as np

from hivex_jax.cli import main


def test_export_writes_a_world_that_show_reads_back(tmp_path, capsys):
    out = tmp_path / "w6000"
    argv = [
        "world",
        "export",
        "--env",
        "OceanPlasticCollection-v0",
        "--world",
        "6000",
        "--out",
        str(out),
        "--png",
    ]
    assert main(argv) == 0
    meta = json.loads((out / "world.json").read_text())
    assert meta["env"] == "OceanPlasticCollection-v0" and meta["world_seed"] == 6000
    # --png: grid fields as editable PNGs instead of .npy (one file per field), previews with a legend
    assert (out / "background.png").is_file() and not (out / "background.npy").exists()
    assert (out / "preview" / "background.png").is_file() and (out / "preview" / "legend.txt").is_file()
    assert "previews to look at" in capsys.readouterr().out
    assert main(["world", "show", str(out), "--env", "OceanPlasticCollection-v0"]) == 0
    assert "background" in capsys.readouterr().out
    # a stress world exports the same way, and differs from the plain world
    stress = tmp_path / "far"
    argv = ["world", "export", "--env", "OceanPlasticCollection-v0", "--world", "6000", "--out", str(stress)]
    assert main([*argv, "--stress", "far_corner"]) == 0
    assert not np.array_equal(np.load(stress / "hotspot_x.npy"), np.load(out / "hotspot_x.npy"))


def test_bad_world_file_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "heights.png").write_bytes(b"junk")
    status = main(["world", "show", str(tmp_path), "--env", "WildfireResourceManagement-v0"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err and "heights.png" in err and "unreadable" in err


def test_export_to_a_file_in_the_way_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    argv = ["world", "export", "--env", "WindFarmControl-v0", "--world", "6000", "--out"]
    for out in (tmp_path / "afile", tmp_path / "afile" / "w"):
        assert main([*argv, str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "--out" in err and "is a file, not a folder" in err
