"""Synthetic LLM-serving request traces, deterministic from (profile, seed).

    profile = TraceProfile.from_dict(json.load(f), concurrency=32)
    digest, count = write_trace(profile, seed=7, out=handle)   # JSON Lines
    python -m benchmarks.lib.workloads generate PROFILE.json --seed 7 -o trace.jsonl

A profile gives the arrival process (``poisson``, or ``gamma`` with a coefficient
of variation ``cv`` of the gaps), prompt and output length distributions
(``lognormal`` by ``mean`` and ``p99`` or ``median`` and ``sigma``, ``uniform``
by ``min`` and ``max``, ``normal`` by ``mean`` and ``stddev``, ``fixed``; every
one bounded by optional ``min``/``max``), tenants with weights, the share of
conversations that start with a shared prefix (a system prompt, drawn by Zipf
popularity from a pool per tenant or one ``global`` pool) and conversations
(``sessions``: a geometric number of turns with mean ``turns_mean``; a later
turn re-sends the previous turn's prompt and output, plus ``message_tokens``
new ones). Shared prefixes and earlier turns are what a KV cache can reuse. A
later turn arrives as the next arrival of its tenant (the trace does not wait
for the previous answer). It stops after ``count`` requests or at
``duration_s``, whichever is first. A rate may be given per stream
(``rate_rps_per_stream``), resolved with the scenario's concurrency.

The same (profile, seed) gives the same bytes on any machine and Python >= 3.10
(checked on 3.10 to 3.13): only ``random.Random(int).random()`` is used (the one
generator method whose sequence Python promises to keep) and every distribution
is computed from it here; each purpose (arrivals, the tenant/prefix/session
mix, prompt and output lengths, session turns, the prefix pool) has its own
stream, so changing one distribution leaves the others alone; numbers are
written with fixed precision (times in microseconds) and lines are formatted by
hand. The one outside dependency is the C library's log/exp/cos: they may
differ by an ulp between platforms, which changes an output only if a value
lies within an ulp of a rounding boundary of a whole token or a microsecond.
The first line is a header (format, generator version, profile digest, seed);
the SHA-256 of the whole file is the trace's recorded digest.

Stdlib only and a single file on purpose (hence its length): the example
bundles ship a byte-identical copy as ``harness/tracegen.py`` (a test compares
them), because a harness runs with nothing but the bundle and the system's
python3. After a change: ``cp benchmarks/lib/workloads/tracegen.py
examples/*/harness/``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import IO, Any, Final

FORMAT: Final = "reprogate.trace/v1"
GENERATOR_VERSION: Final = 1
Z99: Final = 2.3263478740408408  # the standard normal's 0.99 quantile
NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_REQUESTS: Final = 10_000_000
MAX_TOKENS: Final = 10_000_000
LENGTH_KINDS: Final = ("lognormal", "uniform", "normal", "fixed")


class ProfileError(ValueError):
    """A profile that cannot be used; ``problems`` lists each reason by path."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


# --- random numbers from random() alone -----------------------------------------


class Rng:
    """Distributions computed from ``random.Random.random()`` only."""

    def __init__(self, seed: int, stream: str):
        material = hashlib.sha256(f"{seed}:{stream}".encode()).digest()
        self._random = random.Random(int.from_bytes(material[:8], "big"))  # noqa: S311

    def uniform(self) -> float:
        """In (0, 1]: safe for log()."""
        return 1.0 - self._random.random()

    def exponential(self, rate: float) -> float:
        return -math.log(self.uniform()) / rate

    def normal(self) -> float:
        """Box-Muller, one value per two uniforms (the second is not kept)."""
        u1, u2 = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def gamma(self, shape: float) -> float:
        """Marsaglia-Tsang; shape < 1 boosted by u ** (1 / shape). Mean = shape."""
        if shape < 1.0:
            return self.gamma(shape + 1.0) * self.uniform() ** (1.0 / shape)
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            z = self.normal()
            v = (1.0 + c * z) ** 3
            if v > 0 and math.log(self.uniform()) < 0.5 * z * z + d - d * v + d * (
                math.log(v)
            ):
                return d * v

    def pick(self, cumulative: list[float]) -> int:
        """An index drawn by the weights whose running sums are ``cumulative``."""
        target = (1.0 - self.uniform()) * cumulative[-1]
        return min(bisect.bisect_right(cumulative, target), len(cumulative) - 1)


def _round(x: float) -> int:
    return math.floor(x + 0.5)


# --- the profile ------------------------------------------------------------------


@dataclass(frozen=True)
class Lengths:
    """A token-length distribution: ``a``/``b`` are (mu, sigma) for lognormal,
    (min, max) for uniform, (mean, stddev) for normal, (value, 0) for fixed."""

    kind: str
    a: float
    b: float
    minimum: int = 1
    maximum: int = MAX_TOKENS

    def sample(self, rng: Rng) -> int:
        if self.kind == "lognormal":
            x = math.exp(self.a + self.b * rng.normal())
        elif self.kind == "uniform":
            x = self.a + math.floor((1.0 - rng.uniform()) * (self.b - self.a + 1))
        elif self.kind == "normal":
            x = self.a + self.b * rng.normal()
        else:
            x = self.a
        return max(self.minimum, min(self.maximum, _round(x)))


@dataclass(frozen=True)
class TraceProfile:
    name: str
    arrival: str  # poisson | gamma
    rate_rps: float
    cv: float  # coefficient of variation of the gaps (1 for poisson)
    prompt_tokens: Lengths
    output_tokens: Lengths
    prefix_share: float
    prefix_tokens_mean: int
    prefixes_per_tenant: int
    prefix_popularity: float  # Zipf exponent over a pool's prefixes
    prefix_scope: str  # tenant | global
    tenant_weights: tuple[float, ...]
    turns_mean: float  # mean turns per conversation (1: every request alone)
    message_tokens: Lengths  # the new tokens of each later turn
    count: int
    duration_s: float | None

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, concurrency: int | None = None
    ) -> TraceProfile:
        """A profile from a JSON object: a bare profile or a workload file (its
        ``requests`` object). Every problem is collected before raising."""
        return _ProfileReader(concurrency).read(data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class _ProfileReader:
    def __init__(self, concurrency: int | None):
        self.concurrency = concurrency
        self.problems: list[str] = []

    def fail(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def obj(self, value: Any, where: str, keys: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, "must be an object")
            return {}
        for key in sorted(set(value) - set(keys.split())):
            self.fail(f"{where}.{key}", f"unknown key (known: {keys})")
        return value

    def num(
        self, obj: Mapping[Any, Any], key: Any, where: str, *, default: Any = None,
        low: float = 0.0, high: float = MAX_TOKENS,
    ) -> float:  # fmt: skip
        """``obj[key]`` (else ``default``) as a number in [low, high]."""
        value = obj.get(key, default)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or not low <= value <= high:
            text = f"{value!r:.40} is not a number in [{low:g}, {high:g}]"
            self.fail(where.format(key) if "{" in where else where + key, text)
            return low
        return float(value)

    def read(self, data: Mapping[str, Any]) -> TraceProfile:
        top = data if isinstance(data, Mapping) else {}
        name = top.get("name", "profile")
        if not (isinstance(name, str) and NAME_RE.match(name)):
            self.fail("name", f"{name!r:.40} is not a short name")
        bare = {k: v for k, v in top.items() if k != "name"}
        req = self.obj(top.get("requests", bare), "requests", REQUEST_KEYS)
        process, rate, cv = self.arrival(req.get("arrival"))
        prefix = self.obj(req.get("shared_prefix", {}), "shared_prefix", PREFIX_KEYS)
        sessions = self.obj(
            req.get("sessions", {}), "sessions", "turns_mean message_tokens"
        )
        scope = prefix.get("scope", "tenant")
        if scope not in ("tenant", "global"):
            self.fail("shared_prefix.scope", "must be tenant or global")
        count = MAX_REQUESTS
        if "count" in req or "count_per_scenario" in req:
            key = "count" if "count" in req else "count_per_scenario"
            count = int(self.num(req, key, "requests.", low=1, high=MAX_REQUESTS))
        elif "duration_s" not in req:
            self.fail("requests", "needs count (or count_per_scenario) or duration_s")
        duration = None
        if "duration_s" in req:
            duration = self.num(req, "duration_s", "requests.", low=1e-3, high=1e7)
        where = "shared_prefix."
        profile = TraceProfile(
            name=str(name),
            arrival=process,
            rate_rps=rate,
            cv=cv,
            prompt_tokens=self.lengths(req.get("prompt_tokens"), "prompt_tokens"),
            output_tokens=self.lengths(req.get("output_tokens"), "output_tokens"),
            prefix_share=self.num(prefix, "share", where, default=0, high=1),
            prefix_tokens_mean=int(
                self.num(prefix, "prefix_tokens_mean", where, default=0)
            ),
            prefixes_per_tenant=int(
                self.num(prefix, "prefixes_per_tenant", where, default=16, low=1)
            ),
            prefix_popularity=self.num(prefix, "popularity", where, default=1, high=10),
            prefix_scope=str(scope),
            tenant_weights=self.tenants(req.get("tenants", {"count": 1})),
            turns_mean=self.num(
                sessions, "turns_mean", "sessions.", default=1, low=1, high=1000
            ),
            message_tokens=self.lengths(
                sessions.get("message_tokens", {"distribution": "fixed", "value": 1}),
                "sessions.message_tokens",
            ),
            count=count,
            duration_s=duration,
        )
        if self.problems:
            raise ProfileError(self.problems)
        return profile

    def arrival(self, value: Any) -> tuple[str, float, float]:
        arrival = self.obj(value, "arrival", "process rate_rps rate_rps_per_stream cv")
        process = arrival.get("process", "poisson")
        if process not in ("poisson", "gamma"):
            self.fail("arrival.process", f"{process!r:.40} is not poisson or gamma")
        if "rate_rps_per_stream" in arrival:
            key = "rate_rps_per_stream"
            if self.concurrency is None:
                self.fail(f"arrival.{key}", "needs the scenario's concurrency")
        else:
            key = "rate_rps"
        rate = self.num(arrival, key, "arrival.", low=1e-6, high=1e6)
        if key == "rate_rps_per_stream":
            rate *= self.concurrency or 1
        if process != "gamma" and "cv" in arrival:
            self.fail("arrival.cv", "only a gamma process has a cv")
        cv = self.num(arrival, "cv", "arrival.", default=1, low=0.05, high=20)
        return str(process), rate, cv

    def lengths(self, value: Any, where: str) -> Lengths:
        spec = self.obj(value, where, LENGTH_KEYS)
        kind, at = spec.get("distribution"), f"{where}."
        low = int(self.num(spec, "min", at, default=1, low=1))
        high = int(self.num(spec, "max", at, default=MAX_TOKENS, low=1))
        if low > high:
            self.fail(where, f"min {low} is over max {high}")
        a, b = 1.0, 0.0
        if kind == "lognormal" and "median" in spec:
            a = math.log(max(self.num(spec, "median", at), 1e-9))
            b = self.num(spec, "sigma", at, high=10)
        elif kind == "lognormal":
            # mean = e^(mu + b^2/2) and p99 = e^(mu + Z99 b): solve for b, then mu.
            mean, p99 = self.num(spec, "mean", at), self.num(spec, "p99", at)
            gap = math.log(max(p99, 1e-9) / max(mean, 1e-9))
            if 0 < gap < Z99 * Z99 / 2:
                b = Z99 - math.sqrt(Z99 * Z99 - 2.0 * gap)
                a = math.log(mean) - b * b / 2.0
            else:
                limit = math.exp(Z99 * Z99 / 2)
                self.fail(where, f"a lognormal needs mean < p99 < {limit:.1f}x mean")
        elif kind == "uniform":
            a, b = self.num(spec, "min", at), self.num(spec, "max", at)
        elif kind == "normal":
            a, b = self.num(spec, "mean", at), self.num(spec, "stddev", at)
        elif kind == "fixed":
            a = self.num(spec, "value", at)
        else:
            kinds = ", ".join(LENGTH_KINDS)
            self.fail(f"{at}distribution", f"{kind!r:.40} is not one of {kinds}")
        return Lengths(str(kind), a, b, low, high)

    def tenants(self, value: Any) -> tuple[float, ...]:
        tenants = self.obj(value, "tenants", "count weights")
        weights = tenants.get("weights", [1.0] * int(
            self.num(tenants, "count", "tenants.", default=1, low=1, high=1000)
        ))  # fmt: skip
        if not (isinstance(weights, list) and 0 < len(weights) <= 1000):
            self.fail("tenants.weights", "must be a list of 1 to 1000 numbers")
            return (1.0,)
        if "count" in tenants and tenants["count"] != len(weights):
            self.fail("tenants.count", "differs from the number of weights")
        listed = dict(enumerate(weights))
        return tuple(
            self.num(listed, i, "tenants.weights[{}]", low=1e-9, high=1e9)
            for i in range(len(weights))
        )


REQUEST_KEYS: Final = (
    "arrival prompt_tokens output_tokens shared_prefix sessions tenants count "
    "count_per_scenario duration_s seed"
)
PREFIX_KEYS: Final = "share prefix_tokens_mean prefixes_per_tenant popularity scope"
LENGTH_KEYS: Final = "distribution mean p99 median sigma stddev value min max"


# --- the generator ----------------------------------------------------------------


@dataclass(frozen=True)
class TraceRequest:
    id: int
    t: float  # arrival, seconds from the start
    tenant: str
    session: str  # the conversation; a first turn starts a new one
    turn: int  # 1 for the first turn
    prefix: str | None  # the shared prefix's id, None for a request without one
    prefix_tokens: int  # how many leading prompt tokens the shared prefix covers
    history_tokens: int  # leading tokens re-sent from the session's previous turn
    prompt_tokens: int
    output_tokens: int

    def line(self) -> str:
        prefix = "null" if self.prefix is None else f'"{self.prefix}"'
        return (
            f'{{"id":{self.id},"t":{self.t:.6f},"tenant":"{self.tenant}",'
            f'"session":"{self.session}","turn":{self.turn},"prefix":{prefix},'
            f'"prefix_tokens":{self.prefix_tokens},'
            f'"history_tokens":{self.history_tokens},'
            f'"prompt_tokens":{self.prompt_tokens},"output_tokens":{self.output_tokens}}}'
        )

    @classmethod
    def from_line(cls, line: str) -> TraceRequest:
        data = json.loads(line)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


@dataclass
class _Session:
    id: str
    prefix: str | None
    prefix_tokens: int
    tokens: int  # prompt + output of the last turn
    turn: int
    turns_left: int


def _cumulative(weights: list[float]) -> list[float]:
    total, result = 0.0, []
    for weight in weights:
        total += weight
        result.append(total)
    return result


class _Generator:
    """One pass over a profile; each purpose draws from its own stream."""

    def __init__(self, profile: TraceProfile, seed: int):
        self.p = profile
        self.arrivals, self.mix = Rng(seed, "arrivals"), Rng(seed, "mix")
        self.prompts, self.outputs = (
            Rng(seed, "prompt-tokens"),
            Rng(seed, "output-tokens"),
        )
        self.turns = Rng(seed, "turns")
        self.tenants = [f"t{i}" for i in range(len(profile.tenant_weights))]
        self.tenant_cdf = _cumulative(list(profile.tenant_weights))
        n = profile.prefixes_per_tenant
        weights = [1.0 / (rank + 1) ** profile.prefix_popularity for rank in range(n)]
        self.popularity = _cumulative(weights)
        pools = ["g"] if profile.prefix_scope == "global" else self.tenants
        lengths, mean = Rng(seed, "prefix-pool"), profile.prefix_tokens_mean
        self.prefix_len = {  # each prefix: 0.5x to 1.5x the mean
            f"{pool}/p{i}": max(1, _round(mean * (0.5 + lengths.uniform())))
            for pool in pools
            for i in range(n)
        }
        self.open: dict[str, list[_Session]] = {t: [] for t in self.tenants}
        self.started = 0

    def gap(self) -> float:
        p = self.p
        if p.arrival == "gamma":
            shape = 1.0 / (p.cv * p.cv)
            return self.arrivals.gamma(shape) / (p.rate_rps * shape)
        return self.arrivals.exponential(p.rate_rps)

    def request(self, i: int, t: float) -> TraceRequest:
        p, mix = self.p, self.mix
        tenant = self.tenants[mix.pick(self.tenant_cdf)]
        # A fixed number of draws per request keeps the mix stream aligned.
        follow, which = mix.uniform(), mix.uniform()
        shared, rank = mix.uniform(), mix.pick(self.popularity)
        output = p.output_tokens.sample(self.outputs)
        sessions = self.open[tenant]
        if sessions and follow <= 1.0 - 1.0 / p.turns_mean:
            session = sessions[min(int(which * len(sessions)), len(sessions) - 1)]
            message = p.message_tokens.sample(self.prompts)
            if session.tokens + message <= p.prompt_tokens.maximum:
                return self.emit(i, t, tenant, session, message, output)
            sessions.remove(session)  # the context is full: a new conversation
        prompt = p.prompt_tokens.sample(self.prompts)
        prefix = None
        if p.prefix_tokens_mean > 0 and shared <= p.prefix_share:
            pool = "g" if p.prefix_scope == "global" else tenant
            prefix = f"{pool}/p{rank}"
        covered = min(self.prefix_len[prefix], prompt) if prefix else 0
        # Turns per conversation: geometric with mean turns_mean.
        turns = 1
        while self.turns.uniform() <= 1.0 - 1.0 / p.turns_mean and turns < 1000:
            turns += 1
        self.started += 1
        session = _Session(f"{tenant}/s{self.started}", prefix, covered, 0, 0, turns)
        sessions.append(session)
        return self.emit(i, t, tenant, session, prompt, output)

    def emit(
        self, i: int, t: float, tenant: str, s: _Session, new_tokens: int, output: int
    ) -> TraceRequest:
        history, prompt = s.tokens, s.tokens + new_tokens
        s.tokens, s.turn, s.turns_left = prompt + output, s.turn + 1, s.turns_left - 1
        if s.turns_left <= 0:
            self.open[tenant].remove(s)
        return TraceRequest(
            i,
            t,
            tenant,
            s.id,
            s.turn,
            s.prefix,
            s.prefix_tokens,
            history,
            prompt,
            output,
        )


def generate(profile: TraceProfile, seed: int) -> Iterator[TraceRequest]:
    """The trace's requests in arrival order."""
    gen = _Generator(profile, seed)
    t = 0.0
    for i in range(profile.count):
        t = round(t + gen.gap(), 6)
        if profile.duration_s is not None and t >= profile.duration_s:
            return
        yield gen.request(i, t)


def header(profile: TraceProfile, seed: int) -> str:
    return (
        f'{{"format":"{FORMAT}","generator":{GENERATOR_VERSION},'
        f'"profile":"{profile.name}","profile_sha256":"{profile.digest()}","seed":{seed}}}'
    )


def write_trace(profile: TraceProfile, seed: int, out: IO[bytes]) -> tuple[str, int]:
    """Write the trace as JSON Lines; returns (SHA-256 of the bytes, requests)."""
    digest, count = hashlib.sha256(), 0
    for text in _lines(profile, seed):
        data = (text + "\n").encode()
        digest.update(data)
        out.write(data)
        count += 1
    return digest.hexdigest(), count - 1


def _lines(profile: TraceProfile, seed: int) -> Iterator[str]:
    yield header(profile, seed)
    for request in generate(profile, seed):
        yield request.line()


def read_trace(lines: IO[str]) -> tuple[dict[str, Any], list[TraceRequest]]:
    first = json.loads(lines.readline())
    if first.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} trace")
    return first, [TraceRequest.from_line(line) for line in lines if line.strip()]
