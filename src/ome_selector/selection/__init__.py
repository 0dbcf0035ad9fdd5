"""The pure selection core: parameter counts, versions, matcher, scoring, explain, outcomes and messages.

No I/O and no Kubernetes client here. Import the modules directly (``ome_selector.selection.outcome`` ...);
this package deliberately re-exports nothing, because :mod:`ome_selector.catalog` builds on
:mod:`.matcher` while :mod:`.explain` and :mod:`.outcome` build on the catalog.
"""
