"""`hivex serve`: any registered environment over HTTP for agents outside JAX (OpenEnv-style routes).

By role: `sessions` holds the batched session pools and the step-key rule (JAX only), `batching` steps
each pool's requests together, `reference_episodes` and `grading` are the grader (scripted and random
episodes, the normalised score), `server` the request logic and session ownership, `codec` the JSON forms
of observations, actions and states, `describe` what an env looks like to a client (description, schemas),
`guard` the transport limits (ASGI middleware), `app` the FastAPI app, `openenv_session`, `mcp` and
`openenv` OpenEnv's protocol, `config` the limits and callers, `manifest` OpenEnv's manifest, `asgi` the
module-level apps, `cli` the `hivex serve` command. FastAPI, uvicorn and httpx come with the `serve`
extra (`pip install -e ".[serve]"`). See docs/serve.md.
"""
