"""The lab layer (Django-free): what the runner does on the lab host around a
harness, beside the sandbox — device policy, telemetry, runner artefacts."""
