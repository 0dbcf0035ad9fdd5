"""The pure selection core: counts, versions, profiles, matcher, ranking, explain, outcomes, the memo of
auto-selection results and messages.

No I/O, no Kubernetes client and no catalog here: :func:`.outcome.evaluate` and :func:`.explain.explain` read
through :class:`.view.CatalogView`, which :class:`ome_selector.catalog.Catalog` (a layer above) satisfies.
Import the modules directly (``ome_selector.selection.outcome`` ...); this package re-exports nothing.
"""
