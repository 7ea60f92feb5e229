"""The review app: a local web app over run folders for reviewing and annotating episodes.

    python -m vabench.review RUN_FOLDER [RUN_FOLDER ...] [--port 8765] [--host 127.0.0.1]
    python -m vabench.review videos [RUN_FOLDER ...] [--force] [--fps 2] [--demos DEMO_ROOT ...]
    python -m vabench.review labels RUN_FOLDER [--out labels.csv]

Reads run folders (outcome rows through each run's outcome table, episode records, frames,
recording views, videos); writes only ``_annotations/`` (and, as every reader does, brings the
run's ``_outcomes.parquet`` up to date with its episode files). No simulator, Ray or agent imports.
"""
