"""The human player's web app: one page per operator (``/play/<operator>``) and its questions, on
the review app's access layer (:func:`vabench.review.app.guard`: the Host check, the token where
there is one, and writes only from this app's own pages).

- ``GET /play/<op>/api/state``: what the page shows now (the first visit takes an episode);
- ``POST /play/<op>/api/answer``: one decision in the paper's JSON form (a JSON body), answered
  once the loop has processed it;
- ``POST /play/<op>/api/next``: the next unplayed episode, once the one in play is over;
- ``POST /play/<op>/api/summary``: the person's own summary in a summary stage (a JSON object);
- ``GET /play/<op>/demo/<episode>/<demo>/<i>``: a demonstration frame of the summary stage;
- ``GET /play/<op>/image/<episode>/<step>/<i>.jpg``: an image of the current observation, the
  bytes a chat model is sent.

Decisions are untrusted input: they reach the seat only as a parsed JSON object, and the loop
validates them as it validates a model's. ``on_done`` is called once no operator has an episode
in play and the run has none left (the study is over).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from vabench.review.access import Access
from vabench.review.app import guard

from .operators import BadDecision, Operator, study_over

HERE = Path(__file__).parent
PLAY = "/play"


class NoOperator(BadDecision):
    """A page asked for with an operator this study does not have."""


def create_app(operators: dict[str, Operator], rules: Access | None = None, on_done: Callable | None = None):
    """The app over ``operators`` (their names are the URLs' last part)."""
    app = FastAPI(title="vabench player", docs_url=None, redoc_url=None, openapi_url=None)
    guard(app, rules or Access())
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    pages = Jinja2Templates(directory=HERE / "templates")

    def operator(name: str) -> Operator:
        if name not in operators:
            raise NoOperator(f"no operator {name!r} in this study; its operators: {', '.join(operators)}")
        return operators[name]

    def after(state: dict) -> dict:
        if on_done is not None and state["phase"] != "playing" and study_over(operators):
            on_done()
        return state

    @app.exception_handler(BadDecision)
    async def refused(request: Request, exc: BadDecision):
        return JSONResponse({"error": str(exc)}, status_code=404 if isinstance(exc, NoOperator) else 400)

    @app.get(PLAY + "/{name}")
    def page(request: Request, name: str):
        operator(name)
        return pages.TemplateResponse(request, "play.html", {"operator": name, "base": f"{PLAY}/{name}"})

    @app.get(PLAY + "/{name}/api/state")
    def state(name: str):
        return after(operator(name).state())

    @app.post(PLAY + "/{name}/api/answer")
    async def answer(request: Request, name: str):
        decision = await _json(request)
        return after(await _threaded(operator(name).answer, decision))

    @app.post(PLAY + "/{name}/api/next")
    async def next_episode(request: Request, name: str):
        await _json(request)
        return after(await _threaded(operator(name).next))

    @app.post(PLAY + "/{name}/api/summary")
    async def summary(request: Request, name: str):
        fields = await _json(request)
        return after(await _threaded(operator(name).summary, fields))

    @app.get(PLAY + "/{name}/demo/{episode}/{demo}/{i}")
    def demo_frame(name: str, episode: int, demo: str, i: int):
        found = operator(name).demo_frame(episode, demo, i)
        if found is None:
            return JSONResponse({"error": "not a frame of this summary stage's demonstration"}, status_code=404)
        return Response(found[0], media_type=found[1], headers={"Cache-Control": "no-store"})

    @app.get(PLAY + "/{name}/image/{episode}/{step}/{i}.jpg")
    def image(name: str, episode: int, step: int, i: int):
        data = operator(name).image(episode, step, i)
        if data is None:
            return JSONResponse({"error": "not an image of the current observation"}, status_code=404)
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    return app


async def _json(request: Request):
    """The request's JSON body (a write from the page sends JSON; a form or text/plain is refused)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BadDecision("send the decision as application/json")
    try:
        return await request.json()
    except ValueError:
        raise BadDecision("the body is not JSON") from None


async def _threaded(fn, *args):
    """``fn`` in a worker thread: a seat's answer waits for the simulator."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)
