"""Console services: domain logic over the store; they raise `errors.*`, never HTTP types.

Every module says its tier in its docstring:

- **use case** — takes the `Runtime`, owns its transaction (`with rt.db.read()` / `with rt.db.write()`), and is
  what a route calls: one function per thing a caller asks;
- **query** — runs over a `Session` the caller holds (reads, and the doors of state changes such as
  `jobs.create_job` and `jobs.set_status`), or over files; it never begins, commits or rolls back a transaction;
- **shared** — values, errors and pure policy (`roles`, `errors`, `outcome`, `json_text`) both tiers use.

Use cases call queries; queries never call use cases. The scheduler and `operator.py` own their transactions like
use cases and call the query tier directly.
"""

__all__: list[str] = []
