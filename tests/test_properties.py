"""Property-based tests (hypothesis): whatever a study.toml or a raw file holds, pqsimd gives either
a valid result or one PqsimdError line, never another exception."""

from __future__ import annotations

import io

import hypothesis.strategies as st
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings

from pqsimd import catalog, store
from pqsimd import study as study_mod
from pqsimd.analyze.load import _read_one
from pqsimd.errors import PqsimdError
from pqsimd.studydir import StudyDir

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12), st.sampled_from(["ml-kem-512", "ref", "avx2", "auto", "gcc", "paired", "../x"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)
study_keys = st.sampled_from(list(study_mod.KEYS) + ["spinz", ""])
tables = st.fixed_dictionaries({}, optional={
    "study": st.one_of(st.dictionaries(study_keys, values, max_size=6), scalars),
    "variants": st.one_of(st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(["v", "ref", "a/b"])),
                                          st.one_of(values, st.fixed_dictionaries(
                                              {"sources": st.sampled_from(["clean", "avx2", "x"]),
                                               "flags": st.lists(st.text(max_size=6), max_size=3)},
                                              optional={"requires_cpu": values, "default": values})),
                                          max_size=3), scalars),
    "analysis": st.one_of(st.dictionaries(st.sampled_from(["alpha", "threshold", "n_boot", "seed", "alpah",
                                                           "extra_baseline", "aa_variants", "adjust"]), values,
                                          max_size=4), scalars),
    "extra": values,
})


def _none_free(x):
    """TOML has no null: drop Nones the way a hand-written file could not contain them."""
    if isinstance(x, dict):
        return {k: _none_free(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [_none_free(v) for v in x if v is not None]
    return x


@SETTINGS
@given(doc=tables)
def test_any_study_toml_gives_a_study_or_one_line(tmp_path_factory, doc):
    d = tmp_path_factory.mktemp("s")
    try:
        text = tomli_w.dumps(_none_free(doc))
    except (TypeError, ValueError):
        return  # not expressible in TOML: nothing a user could write
    (d / "study.toml").write_text(text)
    try:
        s = study_mod.resolve(StudyDir(d), {})
    except PqsimdError as e:
        assert str(e) and "\n" not in str(e)
        return
    # a study that resolves is a usable one
    assert s.schemes and s.variants and s.jobs >= 1 and s.spins >= 1 and s.design in study_mod.DESIGNS
    assert all(catalog.SAFE_ID.match(v) for v in s.variants)
    assert all(s.ops_for(x) for x in s.schemes)


@SETTINGS
@given(data=st.binary(max_size=600))
def test_any_bytes_as_a_raw_file_give_data_or_one_line(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("r")
    (d / "raw").mkdir()
    p = d / "raw" / "x.parquet"
    p.write_bytes(data)
    assert store.read_job_record(p) is None or isinstance(store.read_job_record(p), dict)
    try:
        _read_one(p, d)
    except PqsimdError as e:
        assert str(e) and "\n" not in str(e)


columns = st.lists(st.sampled_from(store.RAW_SCHEMA.names + ["junk"]), unique=True, max_size=16)


@SETTINGS
@given(cols=columns, n=st.integers(0, 5), meta=st.one_of(st.none(), st.binary(max_size=40), st.just(b'{"id": 3}')),
       seed=st.integers(0, 10_000))
def test_any_parquet_table_as_a_raw_file_gives_data_or_one_line(tmp_path_factory, cols, n, meta, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = {}
    for c in cols:
        kind = rng.integers(0, 3)
        if kind == 0:
            arrays[c] = pa.array(rng.integers(-3, 3, n))
        elif kind == 1:
            arrays[c] = pa.array([str(x) for x in rng.integers(0, 3, n)])
        else:
            arrays[c] = pa.array(rng.normal(size=n))
    t = pa.table(arrays) if arrays else pa.table({"x": pa.array([], pa.int64())})
    if meta is not None:
        t = t.replace_schema_metadata({b"pqsimd.job": meta})
    d = tmp_path_factory.mktemp("r")
    (d / "raw").mkdir()
    buf = io.BytesIO()
    pq.write_table(t, buf)
    (d / "raw" / "x.parquet").write_bytes(buf.getvalue())
    try:
        _read_one(d / "raw" / "x.parquet", d)
    except PqsimdError as e:
        assert str(e) and "\n" not in str(e)
