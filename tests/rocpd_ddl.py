"""rocpd test databases are built from the writers' real DDL, which lives outside the project.

The DDL is in ../shared/reference/rocpd-ddl (or $PA_ROCPD_DDL). When it is absent, every test that
writes a rocpd file is skipped with this reason, visibly, and the Nsight Systems tests still run.
"""

from __future__ import annotations

import pytest
from testkit.rocpd_writer import FLAVOURS, ddl_available, ddl_dir

SKIP_REASON = (f"rocpd writers' DDL not found at {ddl_dir()} (../shared/reference/rocpd-ddl, or set "
               "PA_ROCPD_DDL): rocpd test databases are built by executing it")

needs_rocpd_ddl = pytest.mark.skipif(not ddl_available(), reason=SKIP_REASON)


def rocpd_flavours(*flavours: str) -> list:
    """The rocpd writer flavours as pytest params, each skipped when the DDL is absent."""
    return [pytest.param(f, marks=needs_rocpd_ddl) for f in (flavours or FLAVOURS)]
