"""Reviews of a whole catalog, pure like the selection core: lint findings (SPEC §11) and what-if comparisons.

They sit above :mod:`ome_selector.catalog` because they judge every model against every runtime of a catalog,
through the same ranking engine as ``evaluate`` and ``explain``.
"""
