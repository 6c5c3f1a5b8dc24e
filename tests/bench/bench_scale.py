"""Benchmark: sessions/s and steps/s at 1, 2 and 4 worker processes, per engine (on demand).

Every session is one turn with one tool round against the scripted OpenAI-compatible
server (its own process, on 127.0.0.1): two model calls, one tool call, ~30 journaled
steps. Each worker process runs its share of the sessions, `--concurrency` at a time,
into one journal object; the clock starts once every worker has imported and opened
its journal, and stops when the last one is done.

Engines, one function each (`ENGINES`; add one by writing `run_<name>(bench, workers)`):
- `baseline`: the in-process loop with no journal of ours (the default MemoryJournal);
- `sqlite`: one SQLite file shared by the workers;
- `postgres`: one PostgreSQL database (a throwaway server from tests/postgres_server.py
  with its default durability, each commit flushed to disk; or `--dsn`);
- `pg-async`: the same with `synchronous_commit=off` (SQLite's durability, see
  `run_postgres_async`).

Then the cost per round: one worker, one session at a time, seconds per model round
(a model call and its tools) of each engine as a ratio to the baseline's, measured in
the same run. And the listing: `sessions()` at 100,000 sessions on PostgreSQL, with
the `started` index and without it.

    python tests/bench/bench_scale.py [--sessions 200] [--reps 3] [--engines baseline,sqlite,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # postgres_server

SERVER = """
import sys
from toolreel.shell._scripted import ScriptedServer, text, tool_calls

def answer(request):
    last = request["messages"][-1]
    if last["role"] == "tool":
        return text("done: " + last["content"])
    n = int(last["content"].split()[-1])
    return tool_calls((f"call_{n}", "record", {"n": n}))

server = ScriptedServer(answer)
server.requests = type("Nothing", (list,), {"append": lambda self, item: None})()
with server:
    print(server.url, flush=True)
    sys.stdin.read()
"""
ROUNDS_PER_SESSION = 2  # the tool call, then the answer


@attrs.frozen
class Result:
    """One measured pass: how much work, how long, how much CPU where."""

    engine: str
    workers: int
    sessions: int
    steps: int
    seconds: float
    worker_cpu: float
    server_cpu: float
    model_cpu: float

    def line(self) -> str:
        """A row of the report: throughput, then CPU per session (which a busy machine
        disturbs less than wall time) in the workers, the database and the model server."""
        per = 1000 / self.sessions
        return (
            f"{self.engine:<9} {self.workers:>2} workers  {self.sessions / self.seconds:7.1f} "
            f"sessions/s  {self.steps / self.seconds:7.0f} steps/s  cpu ms/session: "
            f"workers {self.worker_cpu * per:5.1f}, database {self.server_cpu * per:5.1f}, "
            f"model {self.model_cpu * per:5.1f}"
        )


@attrs.define
class Bench:
    """What every engine run shares: the model server, a folder, the database, the sizes."""

    url: str
    model_pid: int
    folder: Path
    dsn: str | None
    sessions: int
    concurrency: int
    reps: int


# --- a worker process ------------------------------------------------------------------------


def worker(engine: str, target: str, url: str, first: int, step: int, total: int, at: int) -> None:
    """Run sessions first, first+step, ... below total, `at` at a time; print steps and CPU."""
    import anyio  # noqa: PLC0415 - in the worker process only

    from toolreel.adapters import Journal, MemoryJournal, PostgresJournal, SQLiteJournal  # noqa: PLC0415
    from toolreel.shell import AgentOptions, Client, tool  # noqa: PLC0415

    @tool
    def record(n: int) -> str:
        """Record item n."""
        return f"recorded {n}"

    opened: dict[str, Callable[[], Journal]] = {
        "baseline": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(target),
        "postgres": lambda: PostgresJournal(target),
    }
    journal = opened[engine]()
    ids = [f"s{index:05d}" for index in range(first, total, step)]

    async def main() -> None:
        limit = anyio.Semaphore(at)

        async def one(sid: str) -> None:
            options = AgentOptions(
                model="bench",
                base_url=url,
                api_key="sk-bench",
                tools=[record],
                auto_execute_tools=True,
                journal=journal,
                session_id=sid,
            )
            async with limit, Client(options) as client:
                await client.query(f"record {sid[1:]}")
                await client.wait()

        async with anyio.create_task_group() as group:
            for sid in ids:
                group.start_soon(one, sid)

    print("ready", flush=True)
    sys.stdin.readline()
    anyio.run(main)
    cpu = time.process_time()
    steps = sum(len(list(journal.entries(sid))) for sid in ids)
    journal.close()
    print(json.dumps({"steps": steps, "cpu": cpu}), flush=True)


def spawn(bench: Bench, engine: str, target: str, workers: int, sessions: int, at: int) -> Result:
    """Run `sessions` sessions on `workers` processes; timed from all ready to all done."""
    share = [str(workers), str(sessions), str(at)]
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", engine, target, bench.url, str(k), *share],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(workers)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    server_before, model_before = database_cpu(), cpu_of(bench.model_pid)
    start = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        assert proc.stdout is not None
        reports.append(json.loads(proc.stdout.readline()))
    seconds = time.perf_counter() - start  # steps counted after the clock, in each worker
    for proc in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"a {engine} worker failed")
    return Result(
        engine=engine,
        workers=workers,
        sessions=sessions,
        steps=sum(report["steps"] for report in reports),
        seconds=seconds,
        worker_cpu=sum(report["cpu"] for report in reports),
        server_cpu=database_cpu() - server_before,
        model_cpu=cpu_of(bench.model_pid) - model_before,
    )


def database_cpu() -> float:
    """CPU seconds used so far by every `postgres` process of this machine (Linux /proc),
    with their children that ended (a backend exits when its worker disconnects)."""
    return sum(_cpu(stat, "postgres") for stat in Path("/proc").glob("[0-9]*/stat"))


def cpu_of(pid: int) -> float:
    """CPU seconds used so far by process `pid` (Linux /proc)."""
    return _cpu(Path(f"/proc/{pid}/stat"), None)


def _cpu(stat: Path, name: str | None) -> float:
    """A process's user + system CPU seconds from its /proc stat (0 if not `name` or gone)."""
    try:
        head, tail = stat.read_text().rsplit(")", 1)
    except (OSError, ValueError):
        return 0.0
    if name is not None and head.split("(", 1)[-1] != name:
        return 0.0
    values = tail.split()
    ticks = sum(int(value) for value in values[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


# --- engines: one function each -------------------------------------------------------------


def run_baseline(bench: Bench, workers: int, sessions: int, at: int) -> Result:
    """The in-process loop, journaled in memory only."""
    return spawn(bench, "baseline", "", workers, sessions, at)


def run_sqlite(bench: Bench, workers: int, sessions: int, at: int) -> Result:
    """One SQLite file (WAL) shared by every worker."""
    target = bench.folder / f"sqlite-{uuid.uuid4().hex[:8]}.db"
    return spawn(bench, "sqlite", str(target), workers, sessions, at)


def run_postgres(bench: Bench, workers: int, sessions: int, at: int) -> Result:
    """One PostgreSQL database shared by every worker (a fresh schema per pass)."""
    from postgres_server import schema_dsn  # noqa: PLC0415

    assert bench.dsn is not None
    target = schema_dsn(bench.dsn, f"bench_{uuid.uuid4().hex[:8]}")
    return spawn(bench, "postgres", target, workers, sessions, at)


def run_postgres_async(bench: Bench, workers: int, sessions: int, at: int) -> Result:
    """As `run_postgres`, with `synchronous_commit=off` in the DSN: SQLite's durability (a
    killed worker loses nothing; a crash of the database server may lose its last commits)."""
    from postgres_server import schema_dsn  # noqa: PLC0415

    assert bench.dsn is not None
    target = schema_dsn(bench.dsn, f"bench_{uuid.uuid4().hex[:8]}")
    target += "%20-csynchronous_commit%3Doff"
    return spawn(bench, "postgres", target, workers, sessions, at)


ENGINES: dict[str, Callable[[Bench, int, int, int], Result]] = {
    "baseline": run_baseline,
    "sqlite": run_sqlite,
    "postgres": run_postgres,
    "pg-async": run_postgres_async,
}


def listing(dsn: str, count: int = 100_000) -> dict[str, float]:
    """Seconds `sessions()` takes at `count` sessions, with the index and without it."""
    import psycopg  # noqa: PLC0415
    from postgres_server import schema_dsn  # noqa: PLC0415

    from toolreel.adapters import PostgresJournal  # noqa: PLC0415

    target = schema_dsn(dsn, f"listing_{uuid.uuid4().hex[:8]}")
    journal = PostgresJournal(target)
    with psycopg.connect(target, autocommit=True) as db:
        db.execute(
            "INSERT INTO toolreel_sessions (id) "
            "SELECT 'session-' || n FROM generate_series(1, %s) AS n",
            (count,),
        )
        db.execute("ANALYZE toolreel_sessions")
        timed = {"with index": _best(journal.sessions)}
        db.execute("DROP INDEX toolreel_sessions_started")
        timed["without"] = _best(journal.sessions)
    journal.close()
    return timed


def _best(work: Callable[[], object], reps: int = 5) -> float:
    """The fastest of `reps` runs of `work`, in seconds."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Start the model server (and a database), run every engine, print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4, help="sessions at once a worker")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--round-sessions", type=int, default=60)
    parser.add_argument("--reps", type=int, default=1, help="passes each; the fastest is shown")
    parser.add_argument("--dsn", help="an existing PostgreSQL database (default: a throwaway)")
    args = parser.parse_args()
    engines = args.engines.split(",")
    model = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert model.stdout is not None
    url = model.stdout.readline().strip()
    database = None
    if {"postgres", "pg-async"} & set(engines) and args.dsn is None:
        import postgres_server  # noqa: PLC0415

        database = postgres_server.start(durable=True)  # commits reach the disk, as SQLite's
    dsn = args.dsn or (database.dsn if database else None)
    try:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(
                url, model.pid, Path(folder), dsn, args.sessions, args.concurrency, args.reps
            )
            report(bench, engines, [int(w) for w in args.workers.split(",")], args.round_sessions)
    finally:
        model.kill()
        if database is not None:
            database.stop()


def best(bench: Bench, engine: str, workers: int, sessions: int, at: int) -> Result:
    """The fastest of `bench.reps` passes (a busy machine only ever slows a pass down)."""
    runs = [ENGINES[engine](bench, workers, sessions, at) for _ in range(bench.reps)]
    return min(runs, key=lambda result: result.seconds)


def report(bench: Bench, engines: list[str], workers: list[int], round_sessions: int) -> None:
    """Print throughput per engine and worker count, the per-round ratios, the listing."""
    print(f"{os.cpu_count()} cores; {bench.sessions} sessions a pass (best of {bench.reps}), ")
    print(f"{bench.concurrency} at a time a worker, {ROUNDS_PER_SESSION} rounds each")
    for engine in engines:
        for count in workers:
            result = best(bench, engine, count, bench.sessions, bench.concurrency)
            print(attrs.evolve(result, engine=engine).line())
    print(f"\ncost per round, one worker, one session at a time ({round_sessions} sessions):")
    per_round = {}
    for engine in engines:
        result = best(bench, engine, 1, round_sessions, 1)
        per_round[engine] = result.seconds / (round_sessions * ROUNDS_PER_SESSION)
    base = per_round.get("baseline")
    for engine, seconds in per_round.items():
        ratio = f"  x{seconds / base:.2f} the baseline" if base else ""
        print(f"{engine:<9} {seconds * 1000:6.2f} ms a round{ratio}")
    if "postgres" in engines and bench.dsn:
        timed = listing(bench.dsn)
        shown = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in timed.items())
        print(f"\nsessions() at 100,000 sessions on PostgreSQL: {shown}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        engine, target, url, first, step, total, at = sys.argv[2:9]
        worker(engine, target, url, int(first), int(step), int(total), int(at))
    else:
        main()
