"""The human player (``model=human``): people play a run's episodes through a web page, each
decision through the same agent boundary, loop, record and row as a model's (a seat,
:mod:`vabench.run.seat`). :mod:`.shown` is what the page shows and the controls it offers,
:mod:`.operators` each operator's place in the study, :mod:`.app` the pages on the review app's
access layer, :mod:`.serve` the server ``python -m vabench.launch model=human`` starts."""
