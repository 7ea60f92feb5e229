"""The review app: run pages (the outcome table), episode pages (the timeline as the model saw
it, with the evaluator's recording views and video) and the C.9 annotation panel.

Everything it shows is read from run folders; the only thing it writes is
``<run>/_annotations/<annotator>.jsonl`` through :func:`vabench.analysis.labels.append` (reading
keeps ``<run>/_outcomes.parquet`` current and sets an unreadable outcome file aside, as every
reader of :mod:`vabench.results.outcometable` does).
The run page asks for one page of rows at a time (``api/rows``: filtered, sorted and counted here). Every
path from the browser is resolved inside its run folder (:func:`runs.inside`). Model replies
and feedback are untrusted text: the templates escape them (Jinja autoescape, ``tojson``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from vabench.analysis import labels as L
from vabench.core.errors import NotFound
from vabench.core.vocab import RIGHT, ObservationProfile
from vabench.results.outcometable import scan
from vabench.results.recordfile import view_name

from . import judged as J
from . import query as Q
from . import runs
from .access import TOKEN_PARAM, Access, given_token, refusal, without_token

HERE = Path(__file__).parent
SERVED = {".jpg", ".jpeg", ".png", ".mp4", ".jsonl", ".json", ".md", ".txt"}
EXPORT_ID = ["model", "protocol", "summary_source", "task", "seed", "run_index", "success", "end_reason"]


class RunFolders:
    """The run folders the app serves (a folder of runs is its runs), with a cached outcome table
    per folder, re-read when an episode file is added, changes or goes (a running sweep shows up
    on reload; :mod:`vabench.results.outcometable` keeps the table true to the files)."""

    def __init__(self, folders: list[Path]):
        for folder in folders:
            if not Path(folder).is_dir():
                raise NotFound(f"no run folder at {Path(folder).resolve()}")
        self.roots = runs.expand_folders([Path(f) for f in folders])
        self._cache: dict[int, tuple[int, pd.DataFrame, list]] = {}
        self._judged: dict[int, tuple[int, pd.DataFrame]] = {}

    def root(self, i: int) -> Path:
        if not 0 <= i < len(self.roots):
            raise runs.NotInRun(f"no run {i}; runs: 0..{len(self.roots) - 1}")
        return self.roots[i]

    def read(self, i: int) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
        """The run's rows and its unreadable episode files (named in a note on its pages)."""
        root = self.root(i)
        stats = scan(root)
        key = hash(tuple(sorted(stats.items())))
        cached = self._cache.get(i)
        if cached is None or cached[0] != key:
            cached = (key, *runs.outcomes(root, stats))
            self._cache[i] = cached
        return cached[1], cached[2]

    def table(self, i: int) -> pd.DataFrame:
        return self.read(i)[0]

    def judged(self, i: int) -> pd.DataFrame:
        """The judges' items beside people's labels (:mod:`.judged`), re-read when an episode, a
        label file or the calibration subset changes (a save shows on the next request)."""
        root, table = self.root(i), self.table(i)
        files = [*sorted((root / L.ANNOTATIONS).glob("*.jsonl")), root / J.JUDGE / J.CALIBRATION]
        key = hash(
            (self._cache[i][0], *((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file()))
        )
        cached = self._judged.get(i)
        if cached is None or cached[0] != key:
            cached = self._judged[i] = (key, J.items(root, table))
        return cached[1]

    def known(self, i: int, record: str) -> None:
        if record not in set(self.table(i)["record"]):
            raise runs.NotInRun(f"{record!r} is not the record of an episode of this run")


def create_app(folders: list[Path], rules: Access | None = None) -> FastAPI:
    """The app over ``folders``. ``rules``: who may use it (default: this machine, no token): a
    request naming another host, without the token or writing from another site is refused
    (:mod:`.access`)."""
    app = FastAPI(title="vabench review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store = RunFolders(folders)
    guard(app, rules or Access())
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    answer_errors(app)
    pages = templates()
    serve_pages(app, store, pages)
    serve_table(app, store)
    serve_files(app, store)
    serve_labels(app, store)
    serve_judged(app, store, pages)
    return app


def templates() -> Jinja2Templates:
    """The page templates, with the rubric and the view-name filter they use."""
    pages = Jinja2Templates(directory=HERE / "templates")
    pages.env.globals.update(
        RUBRIC=L.RUBRIC, CRITERIA=L.CRITERIA, GATED=L.GATED, GATE_TEXT=L.GATE_TEXT, PAPER=ObservationProfile.PAPER
    )
    pages.env.filters["view_name"] = view_name
    return pages


def guard(app: FastAPI, rules: Access) -> None:
    """Every request passes :func:`.access.refusal` first; a page opened with ``?token=`` gets the
    token as a cookie and is sent to the same address without it (it leaves the address bar and
    the browser's history, as in Jupyter)."""

    @app.middleware("http")
    async def check(request: Request, call_next):
        token = given_token(request.url.query, request.cookies, request.headers.get("authorization"), rules)
        refused = refusal(rules, request.method, request.headers, token)
        if refused is not None:
            challenge = {"WWW-Authenticate": 'Bearer realm="vabench review"'} if refused.status == 401 else None
            return JSONResponse({"error": refused.error}, status_code=refused.status, headers=challenge)
        if rules.token and request.method in ("GET", "HEAD") and TOKEN_PARAM in request.query_params:
            moved = RedirectResponse(without_token(request.url.path, request.url.query), status_code=303)
            moved.set_cookie(rules.cookie, rules.token, httponly=True, samesite="lax")
            return moved
        return await call_next(request)


def answer_errors(app: FastAPI) -> None:
    """A path outside the run, a bad query or a bad label: a JSON error naming it, never a trace."""

    @app.exception_handler(runs.NotInRun)
    async def not_in_run(request: Request, exc: runs.NotInRun):
        return JSONResponse({"error": str(exc)}, status_code=404)

    @app.exception_handler(Q.BadQuery)
    async def bad_query(request: Request, exc: Q.BadQuery):
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(L.LabelError)
    async def bad_label(request: Request, exc: L.LabelError):
        return JSONResponse({"error": f"label not saved: {exc}"}, status_code=400)


def serve_pages(app: FastAPI, store: RunFolders, pages: Jinja2Templates) -> None:
    """The HTML pages: the index of runs, a run's outcome table, an episode's timeline."""

    @app.get("/")
    def index(request: Request):
        if len(store.roots) == 1:
            return RedirectResponse("/run/0")
        listing = [{"i": i, **runs.overview(r, *store.read(i))} for i, r in enumerate(store.roots)]
        return pages.TemplateResponse(request, "index.html", {"runs": listing})

    @app.get("/run/{i}")
    def run_page(request: Request, i: int):
        root, (df, unreadable) = store.root(i), store.read(i)
        first = Q.page(df, _labelled(root), Q.Query())
        return pages.TemplateResponse(
            request,
            "run.html",
            {"i": i, "name": root.name, "path": str(root), "first": first, "unreadable": unreadable,
             "judged": any((root / L.ANNOTATIONS).glob(f"{L.JUDGE_PREFIX}*.jsonl"))},
        )  # fmt: skip

    @app.get("/run/{i}/episode")
    def episode_page(request: Request, i: int, record: str):
        root = store.root(i)
        store.known(i, record)
        ep, table = runs.episode(root, record), store.table(i)
        row = runs.jsonable_rows(table[table["record"] == record])[0]
        return pages.TemplateResponse(request, "episode.html", {"i": i, "name": root.name, "ep": ep, "row": row})


def serve_table(app: FastAPI, store: RunFolders) -> None:
    """The run page's questions: one page of rows (filtered, sorted, counted), an episode's neighbours."""

    @app.get("/run/{i}/api/rows")
    def rows(request: Request, i: int):
        return Q.page(store.table(i), _labelled(store.root(i)), Q.Query.parse(request.query_params))

    @app.get("/run/{i}/api/neighbour")
    def neighbour(request: Request, i: int, record: str, step: int = 1):
        df, root = store.table(i), store.root(i)
        return {"record": Q.neighbour(df, _labelled(root), Q.Query.parse(request.query_params), record, step)}


def serve_files(app: FastAPI, store: RunFolders) -> None:
    """Files of a run folder (images, videos, records; only kinds in SERVED, only inside the run)
    and the labels export."""

    @app.get("/run/{i}/file/{rel:path}")
    def file(i: int, rel: str):
        path = runs.inside(store.root(i), rel)
        if path.suffix.lower() not in SERVED or not path.is_file():
            raise runs.NotInRun(f"no file to show at {rel!r}")
        return FileResponse(path)

    @app.get("/run/{i}/labels.csv")
    def labels_csv(i: int):
        root = store.root(i)
        text = export(root, store.table(i))
        return PlainTextResponse(
            text,
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{root.name}-labels.csv"'},
        )


def serve_labels(app: FastAPI, store: RunFolders) -> None:
    """Annotators' labels: read them, save one (the app's only write)."""

    @app.get("/run/{i}/api/labels")
    def get_labels(i: int, record: str | None = None, annotator: str | None = None):
        df = _latest(store.root(i))
        if record is not None:
            df = df[df["record"] == record]
        if annotator is not None:
            df = df[df["annotator"] == annotator]
        return [_label_json(r) for r in df.to_dict(orient="records")]

    @app.post("/run/{i}/api/labels")
    async def post_label(request: Request, i: int):
        root = store.root(i)
        # a JSON body only: a form or text/plain POST (which another site can send without asking)
        # is refused before it is read; the guard has already refused another site's Origin
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "label not saved: send Content-Type: application/json"}, status_code=415)
        try:
            body = await request.json()
        except ValueError:
            raise L.LabelError("the body must be one JSON object") from None
        L.validate(body, now=datetime.now(UTC))  # refused before anything is looked up or written
        store.known(i, body["record"])
        return L.append(root, body)


def serve_judged(app: FastAPI, store: RunFolders, pages: Jinja2Templates) -> None:
    """Judges beside people (:mod:`.judged`): the run's items, disagreements first, and one
    episode's items for its annotation panel. An adjudication is saved as any label is."""

    @app.get("/run/{i}/judge")
    def judge_page(request: Request, i: int, status: str = "", judge: str = "", offset: int = 0):
        if status not in ("", *J.STATUSES):
            raise Q.BadQuery(f"status must be one of {', '.join(J.STATUSES)} (or empty), not {status!r}")
        if offset < 0:
            raise Q.BadQuery("offset must be >= 0")
        root, frame = store.root(i), store.judged(i)
        shown = J.listing(frame, status, judge, offset, Q.PAGE)
        context = {"i": i, "name": root.name, "status": status, "judge": judge, "page": shown,
                   "statuses": J.STATUSES, "subset": len(J.calibration(root))}  # fmt: skip
        return pages.TemplateResponse(request, "judge.html", context)

    @app.get("/run/{i}/api/judged")
    def judged_items(i: int, record: str):
        store.known(i, record)
        return J.of_record(store.judged(i), record)


def _latest(root: Path) -> pd.DataFrame:
    return L.latest(root) if (root / L.ANNOTATIONS).is_dir() else pd.DataFrame(columns=L.COLUMNS)


def _labelled(root: Path) -> dict[str, list[str]]:
    df = _latest(root)
    return {rec: sorted(g["annotator"]) for rec, g in df.groupby("record")} if len(df) else {}


def _label_json(row: dict) -> dict:
    def clean(v):
        return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v

    return {
        "record": row["record"],
        "annotator": row["annotator"],
        "time": row["time"],
        "gates": {g: clean(row[f"gate_{g}"]) for g in L.GATES},
        "labels": {c: None if clean(row[c]) is None else int(row[c]) for c in L.CRITERIA},
        "notes": row["notes"],
        "steps": row["steps"] if isinstance(row["steps"], dict) else {},
    }


def export(root: Path, table: pd.DataFrame) -> str:
    """Every annotator's current labels with the episode's identity columns, as CSV."""
    df = _latest(root)
    ids = table[["record", *EXPORT_ID]].drop_duplicates("record")
    return L.to_csv(ids.merge(df, on="record", how=RIGHT)[[*L.COLUMNS[:1], *EXPORT_ID, *L.COLUMNS[1:]]])
