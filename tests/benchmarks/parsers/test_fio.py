"""fio-json: the shapes fio really writes (versions, modes, quirks) and bad
input. Real fio output is in test_fio_real.py, the fio-3.1 corpus file in
test_golden.py."""

from __future__ import annotations

import json

import pytest

from tests.benchmarks.parsers.helpers import (
    direction,
    fio_doc,
    job,
    latency,
    one,
    parse_fio,
    problems,
    values,
)

PCT = {"50.000000": 20480, "99.000000": 40960, "99.900000": 81920}


def test_ns_latencies_become_us_and_unused_directions_are_skipped() -> None:
    read = direction(1000.0, clat_ns=latency(21000.5, PCT), lat_ns=latency(25000.0))

    result = parse_fio(fio_doc(job(read=read)))

    assert one(result, "read_clat_us", "p99.9", scope="job1") == 81.92
    assert one(result, "read_clat_us", "mean") == 21.0005
    assert one(result, "read_lat_us", "mean") == 25.0
    assert one(result, "read_iops", "mean") == 1000.0
    assert one(result, "read_bw_mib_s", "mean") == 4096000 / 1024 / 1024
    assert not [m for m in result.metrics if m.name.startswith(("write", "trim"))]
    assert result.warnings == []


def test_fio_2_microsecond_keys_and_padded_duplicate_keys() -> None:
    pct = '{"50.000000" : 96, "99.900000" : 1896, "0.00" : 0, "0.00" : 0, "0.00" : 0}'
    text = (
        '{"fio version" : "fio-2.17", "jobs" : [{"jobname" : "rand", "read" : '
        '{"io_bytes" : 1294256, "bw" : 129386, "iops" : 8086.67, "total_ios" : 80891, '
        '"clat" : {"min" : 1, "max" : 12176, "mean" : 238.36, "stddev" : 397.4, '
        f'"percentile" : {pct}}}}}}}]}}'
    )

    result = parse_fio(text.encode())

    assert one(result, "read_clat_us", "p99.9") == 1896.0  # already µs in fio 2.x
    assert one(result, "read_bw_mib_s", "mean") == 129386 / 1024  # no bw_bytes
    assert [m.stat for m in result.metrics if m.name == "read_clat_us"][-2:] == [
        "p50",
        "p99.9",
    ]
    assert result.warnings == []


def test_text_before_the_json_object_is_skipped_with_a_warning() -> None:
    noise = (
        b"fio: pid=412, err=5/file:io_u.c:1756, func=io_u error\nStarting 1 process\n"
    )
    data = noise + fio_doc(job(read=direction(5.0, clat_ns=latency(1.0, PCT))))

    result = parse_fio(data)

    assert one(result, "read_iops", "mean") == 5.0
    assert any(
        "before the JSON object" in w and "fio: pid=412" in w for w in result.warnings
    )


def test_client_stats_give_one_scope_per_host_and_the_aggregate() -> None:
    host1 = {**job("rr", read=direction(10.0)), "hostname": "lab1", "port": 8765}
    host2 = {**job("rr", read=direction(12.0)), "hostname": "lab2", "port": 8765}
    total = job("All clients", read=direction(22.0))

    result = parse_fio(fio_doc(host1, host2, total, key="client_stats"))

    scopes = {m.scope: m.value for m in result.metrics if m.name == "read_iops"}
    assert scopes == {"lab1/rr": 10.0, "lab2/rr": 12.0, "All clients": 22.0}


def test_repeated_job_names_without_group_reporting_get_numbered_scopes() -> None:
    jobs = [job("seq", write=direction(float(n))) for n in (3, 4)]

    result = parse_fio(fio_doc(*jobs))

    assert one(result, "write_iops", "mean", scope="seq#0") == 3.0
    assert one(result, "write_iops", "mean", scope="seq#1") == 4.0


def test_json_plus_bins_are_recomputed_with_fios_algorithm() -> None:
    # 100 samples: 50 in the 10000 ns bin, 49 at 20000, 1 at 90000
    bins = {"10000": 50, "20000": 49, "90000": 1}
    pct = {"50.000000": 10000, "99.000000": 20000, "99.900000": 90000}
    read = direction(10.0, clat_ns=latency(15000.0, pct, N=100, bins=bins))

    result = parse_fio(fio_doc(job(read=read)))

    recomputed = {"scope": "job1", "method": "recomputed:json+bins"}
    assert one(result, "read_clat_us", "p50", **recomputed) == 10.0
    assert one(result, "read_clat_us", "p99", **recomputed) == 20.0
    assert one(result, "read_clat_us", "p99.9", **recomputed) == 90.0
    assert one(result, "read_clat_us", "p99.9", method="tool") == 90.0
    assert result.info["json_plus"] is True
    assert result.warnings == []


def test_a_tool_percentile_that_its_bins_contradict_is_flagged_and_both_kept() -> None:
    bins = {"10000": 50, "20000": 49, "90000": 1}
    pct = {"50.000000": 10000, "99.900000": 20000}  # edited: the bins say 90000
    read = direction(10.0, clat_ns=latency(15000.0, pct, N=100, bins=bins))

    result = parse_fio(fio_doc(job(read=read)))

    assert sorted(values(result, "read_clat_us", "p99.9")) == [20.0, 90.0]
    assert any("p99.9 is 20 us but its bins give 90 us" in w for w in result.warnings)


def test_bins_that_do_not_add_up_to_n_are_flagged() -> None:
    read = direction(1.0, clat_ns=latency(1.0, PCT, N=7, bins={"20480": 5}))

    result = parse_fio(fio_doc(job(read=read)))

    assert any("the bins hold 5 samples but N is 7" in w for w in result.warnings)


def test_bin_index_form_of_old_json_plus_is_converted() -> None:
    bins = {"FIO_IO_U_PLAT_BITS": 6, "FIO_IO_U_PLAT_VAL": 64, "FIO_IO_U_PLAT_NR": 1216}
    bins.update({"100": 3, "700": 1})  # 100 -> 100 µs exact, 700 -> group 9
    read = direction(1.0, clat=latency(150.0, {"50.000000": 100}, bins=bins))

    result = parse_fio(fio_doc(job(read=read)))

    method = "recomputed:json+bins"
    assert one(result, "read_clat_us", "p50", method=method) == 100.0
    # index 700: error_bits 9, base 2**15, k 60 -> 32768 + 60.5 * 512
    assert one(result, "read_clat_us", "p99", method=method) == 32768 + 60.5 * 512


def test_mixed_and_sync_directions() -> None:
    mixed = direction(50.0, clat_ns=latency(2000.0, PCT))
    sync = {"total_ios": 9, "lat_ns": latency(7000.0)}
    entry = {"jobname": "m", "mixed": mixed, "sync": sync}

    result = parse_fio(fio_doc(entry))

    assert one(result, "mixed_iops", "mean") == 50.0
    assert one(result, "mixed_clat_us", "p50") == 20.48
    assert one(result, "sync_lat_us", "mean") == 7.0


def test_bare_nan_is_read_as_null_and_the_value_skipped() -> None:
    data = fio_doc(job(read=direction(2.0, clat_ns=latency(-1.0))))
    data = data.replace(b'"mean": -1.0', b'"mean": -nan')

    result = parse_fio(data)

    assert values(result, "read_clat_us", "mean") == []
    assert one(result, "read_clat_us", "max") == 90.0
    assert any("nan" in w for w in result.warnings)


def test_a_duplicate_key_with_another_value_keeps_the_first_and_warns() -> None:
    data = fio_doc(job(read=direction(2.0)))
    data = data.replace(b'"iops": 2.0', b'"iops": 2.0, "iops": 3.0')

    result = parse_fio(data)

    assert one(result, "read_iops", "mean") == 2.0
    assert any("duplicate key 'iops'" in w for w in result.warnings)


def test_job_errors_are_warnings() -> None:
    entry = {**job(read=direction(1.0)), "error": 5}

    result = parse_fio(fio_doc(entry))

    assert any("fio reported error 5 for job1" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "no JSON object found"),
        (b"fio: failed to open /dev/nvme0n1\n", "no JSON object found"),
        (b'{"jobs": [', "line 1 column 11: not valid JSON"),
        (b"\xff\xfe{}", "byte 0: the file is not UTF-8 text"),
        (b'{"fio version": "fio-3.33"}', "not fio JSON output"),
        (b'{"request_throughput": 3.0, "completed": 9}', "it looks like vllm-bench"),
        (b'{"jobs": {}}', "jobs: expected a JSON array, found dict"),
        (b'{"jobs": []}', "jobs: fio reported no jobs"),
        (b'{"jobs": [7]}', "jobs[0]: expected a JSON object, found int"),
        (b'{"jobs": [{"read": "x"}]}', "jobs[0].read: expected a JSON object"),
        (b"[" * 100000 + b"]" * 100000, "no JSON object found"),
        (b'{"a":' * 100000 + b"1" + b"}" * 100000, "nested too deeply"),
    ],
)
def test_bad_input_is_a_clear_problem(data: bytes, message: str) -> None:
    assert message in problems(parse_fio(data))


def test_bad_latency_objects_name_their_path() -> None:
    read = direction(1.0, clat_ns=latency(1.0, PCT, N=3, bins={"10": -1}))
    lat = direction(1.0, clat_ns="fast")

    bins_problem = problems(parse_fio(fio_doc(job(read=read))))
    lat_problem = problems(parse_fio(fio_doc(job(write=lat))))

    assert (
        "jobs[0].read.clat_ns.bins['10']: expected a bin value and a count"
        in bins_problem
    )
    assert "jobs[0].write.clat_ns: expected a JSON object, found str" in lat_problem


def test_a_non_numeric_figure_is_skipped_with_a_warning() -> None:
    data = json.loads(fio_doc(job(read=direction(1.0, clat_ns=latency(1.0, PCT)))))
    data["jobs"][0]["read"]["iops"] = "lots"

    result = parse_fio(json.dumps(data).encode())

    assert values(result, "read_iops", "mean") == []
    assert any("'lots' is not a finite number" in w for w in result.warnings)
