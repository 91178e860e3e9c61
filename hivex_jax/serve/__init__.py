"""`hivex serve`: any registered environment over HTTP for agents outside JAX (OpenEnv-style routes).

`sessions` holds the batched session pools (JAX only), `codec` the JSON forms of observations,
actions and states, `app` the FastAPI server, `cli` the `hivex serve` command. FastAPI, uvicorn and
httpx come with the `serve` extra (`pip install -e ".[serve]"`); only `app` and `cli` import them.
See docs/serve.md.
"""
