"""The local executor's progress: the overall bar counts finished jobs only (issue 36: it read 100%
with jobs pending)."""

from __future__ import annotations

import io

from rich.console import Console

from pqsimd.errors import PqsimdError
from pqsimd.run import local


def test_the_bar_does_not_read_100_percent_while_a_job_is_pending(tmp_path, monkeypatch):
    def run_job(sd, job_id, **kw):
        if job_id == "j1":
            raise PqsimdError("job j1: another program kept its CPU busy; the job stays pending")

    monkeypatch.setattr(local, "run_job", run_job)
    out = io.StringIO()
    failures = local.execute(tmp_path, [{"id": "j0"}, {"id": "j1"}], console=Console(file=out, width=150))
    assert [f[0] for f in failures] == ["j1"]
    final = out.getvalue()
    assert "100%" not in final and "50%" in final and "1 pending" in final
