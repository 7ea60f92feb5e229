"""The review app: run pages (the outcome table), episode pages (the timeline as the model saw
it, with the evaluator's recording views and video) and the C.9 annotation panel.

Everything it shows is read from run folders; the only thing it writes is
``<run>/_annotations/<annotator>.jsonl`` through :func:`vabench.analysis.labels.append` (reading
keeps ``<run>/_outcomes.parquet`` current and sets an unreadable outcome file aside, as every
reader of :mod:`vabench.outcometable` does).
The run page asks for one page of rows at a time (``api/rows``: filtered, sorted and counted here). Every
path from the browser is resolved inside its run folder (:func:`runs.inside`). Model replies
and feedback are untrusted text: the templates escape them (Jinja autoescape, ``tojson``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.middleware.trustedhost import TrustedHostMiddleware

from vabench.analysis import labels as L
from vabench.outcometable import scan
from vabench.vocab import ObservationProfile

from . import query as Q
from . import runs

HERE = Path(__file__).parent
SERVED = {".jpg", ".jpeg", ".png", ".mp4", ".jsonl", ".json", ".md", ".txt"}
EXPORT_ID = ["model", "protocol", "summary_source", "task", "seed", "run_index", "success", "end_reason"]


class RunFolders:
    """The run folders the app serves (a folder of runs is its runs), with a cached outcome table
    per folder, re-read when an episode file is added, changes or goes (a running sweep shows up
    on reload; :mod:`vabench.outcometable` keeps the table true to the files)."""

    def __init__(self, folders: list[Path]):
        for folder in folders:
            if not Path(folder).is_dir():
                raise FileNotFoundError(f"no run folder at {Path(folder).resolve()}")
        self.roots = runs.expand_folders([Path(f) for f in folders])
        self._cache: dict[int, tuple[int, pd.DataFrame, list]] = {}

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

    def known(self, i: int, record: str) -> None:
        if record not in set(self.table(i)["record"]):
            raise runs.NotInRun(f"{record!r} is not the record of an episode of this run")


LOCAL_HOSTS = ["127.0.0.1", "localhost"]


def create_app(folders: list[Path], hosts: list[str] | None = None) -> FastAPI:
    """``hosts``: the host names the app answers to (default: this machine only). Requests naming
    another host are refused, so a web page cannot reach the app by DNS rebinding."""
    app = FastAPI(title="vabench review", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts or LOCAL_HOSTS)
    store = RunFolders(folders)
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals.update(
        RUBRIC=L.RUBRIC, CRITERIA=L.CRITERIA, GATED=L.GATED, GATE_TEXT=L.GATE_TEXT, PAPER=ObservationProfile.PAPER
    )
    templates.env.filters["view_name"] = runs.view_name
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.state.store = store

    @app.exception_handler(runs.NotInRun)
    async def not_in_run(request: Request, exc: runs.NotInRun):
        return JSONResponse({"error": str(exc)}, status_code=404)

    @app.exception_handler(Q.BadQuery)
    async def bad_query(request: Request, exc: Q.BadQuery):
        return JSONResponse({"error": str(exc)}, status_code=400)

    @app.exception_handler(L.LabelError)
    async def bad_label(request: Request, exc: L.LabelError):
        return JSONResponse({"error": f"label not saved: {exc}"}, status_code=400)

    @app.get("/")
    def index(request: Request):
        if len(store.roots) == 1:
            return RedirectResponse("/run/0")
        listing = [{"i": i, **runs.overview(r, *store.read(i))} for i, r in enumerate(store.roots)]
        return templates.TemplateResponse(request, "index.html", {"runs": listing})

    @app.get("/run/{i}")
    def run_page(request: Request, i: int):
        root, (df, unreadable) = store.root(i), store.read(i)
        first = Q.page(df, _labelled(root), Q.Query())
        return templates.TemplateResponse(
            request,
            "run.html",
            {"i": i, "name": root.name, "path": str(root), "first": first, "unreadable": unreadable},
        )

    @app.get("/run/{i}/api/rows")
    def rows(request: Request, i: int):
        return Q.page(store.table(i), _labelled(store.root(i)), Q.Query.parse(request.query_params))

    @app.get("/run/{i}/api/neighbour")
    def neighbour(request: Request, i: int, record: str, step: int = 1):
        df, root = store.table(i), store.root(i)
        return {"record": Q.neighbour(df, _labelled(root), Q.Query.parse(request.query_params), record, step)}

    @app.get("/run/{i}/episode")
    def episode_page(request: Request, i: int, record: str):
        root = store.root(i)
        store.known(i, record)
        ep, table = runs.episode(root, record), store.table(i)
        row = runs.jsonable_rows(table[table["record"] == record])[0]
        return templates.TemplateResponse(request, "episode.html", {"i": i, "name": root.name, "ep": ep, "row": row})

    @app.get("/run/{i}/file/{rel:path}")
    def file(i: int, rel: str):
        path = runs.inside(store.root(i), rel)
        if path.suffix.lower() not in SERVED or not path.is_file():
            raise runs.NotInRun(f"no file to show at {rel!r}")
        return FileResponse(path)

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
        # only this app's own pages may save: a JSON body (a form or text/plain POST from another
        # site is refused before it is read) and, when the browser names one, this app's origin
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "label not saved: send Content-Type: application/json"}, status_code=415)
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
            return JSONResponse({"error": f"label not saved: requests from {origin} are refused"}, status_code=403)
        try:
            body = await request.json()
        except ValueError:
            raise L.LabelError("the body must be one JSON object") from None
        L.validate(body, now=datetime.now(UTC))  # refused before anything is looked up or written
        store.known(i, body["record"])
        return L.append(root, body)

    @app.get("/run/{i}/labels.csv")
    def labels_csv(i: int):
        root = store.root(i)
        text = export(root, store.table(i))
        return PlainTextResponse(
            text,
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{root.name}-labels.csv"'},
        )

    return app


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
    }


def export(root: Path, table: pd.DataFrame) -> str:
    """Every annotator's current labels with the episode's identity columns, as CSV."""
    df = _latest(root)
    ids = table[["record", *EXPORT_ID]].drop_duplicates("record")
    return L.to_csv(ids.merge(df, on="record", how="right")[[*L.COLUMNS[:1], *EXPORT_ID, *L.COLUMNS[1:]]])
