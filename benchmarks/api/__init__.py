"""The benchmarks API under ``/api/v1/``: pools, campaigns and runs for people
(``campaigns``), and the runner API a lab host's agent calls with its host token
(``runner``, under ``runner/``)."""
