"""Serves a GGUF model on 127.0.0.1 with llama-cpp-python's OpenAI-compatible server, for the
opt-in real-model test (tests/real_model.rs, README "A real model behind a real CLI").

    <server venv>/bin/python scripts/real-model-server.py MODEL ALIAS PORT USAGE_LOG [EXCHANGES]

Every chat completion's `usage` (the server's own token counts) is appended to USAGE_LOG as
one JSON line, for the test to compare with what opentiger metered (marked `unanswered` when its
client was gone by the time it was ready); with EXCHANGES, each
request's messages and the model's answer too, for a person reading a run. Serves until
killed.
"""

import json
import os
import sys

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ModelSettings, ServerSettings
from starlette.responses import Response


def main():
    model, alias, port, usage_log = sys.argv[1:5]
    exchanges = sys.argv[5] if len(sys.argv) > 5 else None
    settings = ModelSettings(
        model=model,
        model_alias=alias,
        n_ctx=8192,
        n_threads=os.cpu_count() or 2,
        verbose=False,
    )
    app = create_app(
        server_settings=ServerSettings(host="127.0.0.1", port=int(port)),
        model_settings=[settings],
    )

    @app.middleware("http")
    async def log_usage(request, call_next):
        asked = await request.body()
        response = await call_next(request)
        if not request.url.path.endswith("/chat/completions"):
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])
        usage = None
        text = body.decode("utf-8", "replace")
        for candidate in [text] + [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]:
            try:
                found = json.loads(candidate).get("usage")
            except (ValueError, AttributeError):
                continue
            usage = found or usage
        if usage:
            # An answer whose client is gone (its run ended first) reaches no meter: said so.
            if await request.is_disconnected():
                usage = dict(usage, unanswered=True)
            with open(usage_log, "a", encoding="utf-8") as log:
                log.write(json.dumps(usage) + "\n")
        if exchanges:
            with open(exchanges, "a", encoding="utf-8") as log:
                log.write(json.dumps({"request": asked.decode("utf-8", "replace"), "answer": text}) + "\n")
        headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
        return Response(body, response.status_code, headers, response.media_type)

    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
