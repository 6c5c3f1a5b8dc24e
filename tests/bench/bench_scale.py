"""Benchmark: sessions/s and steps/s at 1, 2 and 4 worker processes, per engine (on demand).

Every session is one turn with one tool round against the scripted OpenAI-compatible
server (its own process, on 127.0.0.1): two model calls, one tool call, the same
prompt and the same journaled steps on every engine. At W workers each engine runs
the same `--sessions`, `--concurrency` at a time per worker (W x that in flight). The
clock starts once every process is set up (imported, journal open, connected, and a
first session run uncounted: its lazy imports, or Temporal's sandbox) and stops when
the last session is done.

Engines, one function each (`ENGINES`; add one by writing `run_<name>(bench, workers,
sessions, at)`); an engine whose requirements are absent is skipped, saying why:
- `baseline`: the in-process loop with no journal of ours (the default MemoryJournal);
- `sqlite`: one SQLite file shared by the workers;
- `postgres`: one PostgreSQL database (a throwaway server from tests/postgres_server.py
  with its default durability, each commit flushed to disk; or `--dsn`);
- `pg-async`: the same with `synchronous_commit=off` (SQLite's durability, see
  `run_postgres_async`);
- `temporal`: a Temporal dev server, W `session_worker` processes and one client
  process starting the sessions (tests/bench/scale_temporal.py).

Then the cost per round: one worker, one session at a time, seconds per model round
(a model call and its tools) of each engine as a ratio to the baseline's, measured in
the same run. CPU per session is read from /proc for each kind of process: the
workers, the database or Temporal server (with its children), the model server, and
Temporal's client. And the listing: `sessions()` at 100,000 sessions on PostgreSQL,
with the `started` index and without it. scale_report.py makes the table.

    python tests/bench/bench_scale.py [--sessions 200] [--reps 3] [--engines baseline,sqlite,...]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # postgres_server
sys.path.insert(0, str(Path(__file__).parent))  # scale_report, scale_temporal

from scale_cpu import cpu_of, machine_postgres_cpu, tree_cpu  # noqa: E402
from scale_report import BASELINE, Cell, Result, cell, seconds_per_round, table  # noqa: E402

SERVER = """
import sys
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

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


@attrs.define
class Bench:
    """What every engine run shares: the model server, a folder, the servers, the sizes."""

    url: str
    model_pid: int
    folder: Path
    dsn: str | None
    database_pid: int | None  #: the postmaster of our throwaway server (None: `--dsn`)
    temporal: tuple[str, int] | None  #: the dev server's address and pid
    sessions: int
    concurrency: int
    reps: int


def tools() -> list[Any]:
    """The bench's one tool, as every engine's workers serve it."""
    from toolreel.shell import tool  # noqa: PLC0415

    @tool
    def record(n: int) -> str:
        """Record item n."""
        return f"recorded {n}"

    return [record]


# --- a worker process ------------------------------------------------------------------------


def worker(engine: str, target: str, url: str, first: int, step: int, total: int, at: int) -> None:
    """Run sessions first, first+step, ... below total, `at` at a time, on `go`; say `done`,
    then on the next line print the steps journaled; exit when stdin closes."""
    import anyio  # noqa: PLC0415 - in the worker process only

    from toolreel.adapters import Journal, MemoryJournal, PostgresJournal, SQLiteJournal  # noqa: PLC0415
    from toolreel.shell import AgentOptions, Client  # noqa: PLC0415

    opened: dict[str, Callable[[], Journal]] = {
        "baseline": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(target),
        "postgres": lambda: PostgresJournal(target),
    }
    journal = opened[engine]()
    ids = [f"s{index:05d}" for index in range(first, total, step)]
    served = tools()

    async def main(sids: list[str]) -> None:
        limit = anyio.Semaphore(at)

        async def one(sid: str) -> None:
            options = AgentOptions(
                model="bench",
                base_url=url,
                api_key="sk-bench",
                tools=served,
                auto_execute_tools=True,
                journal=journal,
                session_id=sid,
            )
            async with limit, Client(options) as client:
                await client.query(f"record {sid[1:]}")
                await client.wait()

        async with anyio.create_task_group() as group:
            for sid in sids:
                group.start_soon(one, sid)

    anyio.run(main, [f"w{first:05d}"])  # the first session's lazy imports, before the clock
    print("ready", flush=True)
    sys.stdin.readline()
    anyio.run(main, ids)
    journal.flush()
    print("done", flush=True)
    sys.stdin.readline()  # the clock and the CPU are read: count the steps
    steps = sum(len(list(journal.entries(sid))) for sid in ids)
    journal.close()
    print(json.dumps({"steps": steps}), flush=True)
    sys.stdin.read()


def started(command: list[str]) -> subprocess.Popen[str]:
    """A process of this script (`command` after the script), once it says it is ready."""
    proc = subprocess.Popen(
        [sys.executable, __file__, *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _expect(proc, "ready")
    except RuntimeError:
        proc.kill()
        raise
    return proc


def measure(
    bench: Bench,
    engine: str,
    counts: tuple[int, int],
    working: list[subprocess.Popen[str]],
    clients: list[subprocess.Popen[str]],
    server: Callable[[], float],
) -> Result:
    """Send `go` to the processes that run sessions (the clients, else the workers), time
    them until each says `done`, read every kind of process's CPU meanwhile, then ask
    for the steps they ran."""
    workers, sessions = counts
    starters = clients or working
    before = _cpus(bench, working, clients, server)
    start = time.perf_counter()
    for proc in starters:
        _tell(proc, "go")
    for proc in starters:
        _expect(proc, "done")
    seconds = time.perf_counter() - start
    after = _cpus(bench, working, clients, server)
    reports = []
    for proc in starters:  # counting the steps is no part of the measure
        _tell(proc, "count")
        reports.append(json.loads(_expect(proc, None)))
    for proc in working + clients:
        assert proc.stdin is not None
        proc.stdin.close()
        if proc.wait() != 0:
            raise RuntimeError(f"a {engine} process failed")
    used = [a - b for a, b in zip(after, before, strict=True)]
    return Result(
        engine=engine,
        workers=workers,
        sessions=sessions,
        steps=sum(report["steps"] for report in reports),
        seconds=seconds,
        worker_cpu=used[0],
        server_cpu=used[1],
        model_cpu=used[2],
        client_cpu=used[3],
    )


def _tell(proc: subprocess.Popen[str], word: str) -> None:
    """Send one line to a process of this script."""
    assert proc.stdin is not None
    proc.stdin.write(word + "\n")
    proc.stdin.flush()


def _expect(proc: subprocess.Popen[str], word: str | None) -> str:
    """The next line of a process of this script (RuntimeError if not `word`, where given)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line or (word is not None and line != word + "\n"):
        raise RuntimeError(f"expected {word or 'a report'} from {proc.args!r}, got {line!r}")
    return line


def _cpus(
    bench: Bench,
    working: list[subprocess.Popen[str]],
    clients: list[subprocess.Popen[str]],
    server: Callable[[], float],
) -> tuple[float, float, float, float]:
    """CPU seconds so far of the workers, the server, the model server and the clients."""
    return (
        sum(cpu_of(proc.pid) for proc in working),
        server(),
        cpu_of(bench.model_pid),
        sum(cpu_of(proc.pid) for proc in clients),
    )


def spawn(bench: Bench, engine: str, target: str, workers: int, sessions: int, at: int) -> Result:
    """Run `sessions` sessions on `workers` in-process workers sharing `target`'s journal."""
    share = [str(workers), str(sessions), str(at)]
    procs = [
        started(["--worker", engine, target, bench.url, str(k), *share]) for k in range(workers)
    ]
    return measure(bench, engine, (workers, sessions), procs, [], _server_cpu(bench, engine))


def _server_cpu(bench: Bench, engine: str) -> Callable[[], float]:
    """How to read the CPU of `engine`'s server: our PostgreSQL server's processes, every
    postgres process of the machine for an outside one (`--dsn`), else none."""
    pid = bench.database_pid
    if engine != "postgres":
        return lambda: 0.0
    return machine_postgres_cpu if pid is None else lambda: tree_cpu(pid)


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


def run_temporal(bench: Bench, workers: int, sessions: int, at: int) -> Result:
    """`workers` Temporal worker processes on a task queue of their own; one client process
    starts the sessions, `workers` x `at` at a time, as many as the other engines run."""
    assert bench.temporal is not None
    address, server_pid = bench.temporal
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    procs = [started(["--temporal-worker", address, queue, bench.url]) for _ in range(workers)]
    try:
        warm = str(2 * workers)  # the first workflow of each worker loads the sandbox
        client = started(["--driver", address, queue, str(sessions), str(workers * at), warm])
    except RuntimeError:
        for proc in procs:
            proc.kill()
        raise
    server = functools.partial(tree_cpu, server_pid)
    return measure(bench, "temporal", (workers, sessions), procs, [client], server)


ENGINES: dict[str, Callable[[Bench, int, int, int], Result]] = {
    "baseline": run_baseline,
    "sqlite": run_sqlite,
    "postgres": run_postgres,
    "pg-async": run_postgres_async,
    "temporal": run_temporal,
}
POSTGRES = {"postgres", "pg-async"}


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


# --- the run -----------------------------------------------------------------------------------


def main() -> None:
    """Start the model server (and a database, a Temporal dev server), run every engine
    whose requirements are here, print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4, help="sessions at once a worker")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--round-sessions", type=int, default=60)
    parser.add_argument("--reps", type=int, default=1, help="passes each; fastest and range shown")
    parser.add_argument("--dsn", help="an existing PostgreSQL database (default: a throwaway)")
    args = parser.parse_args()
    engines = args.engines.split(",")
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}; known: {', '.join(ENGINES)}")
    model = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert model.stdout is not None
    url = model.stdout.readline().strip()
    stops: list[Callable[[], None]] = [model.kill]
    try:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(
                url, model.pid, Path(folder), args.dsn, None, None,
                args.sessions, args.concurrency, args.reps,
            )  # fmt: skip
            engines = [e for e in engines if _prepare(bench, e, stops, args.dsn) is None]
            report(bench, engines, [int(w) for w in args.workers.split(",")], args.round_sessions)
    finally:
        for stop in reversed(stops):
            stop()


def _prepare(
    bench: Bench, engine: str, stops: list[Callable[[], None]], dsn: str | None
) -> str | None:
    """Start what `engine` needs, once; the reason it cannot run (printed), or None."""
    reason = None
    if engine in POSTGRES and bench.dsn is None:
        reason = _start_postgres(bench, stops)
    elif engine in POSTGRES and dsn is not None:
        reason = _psycopg_missing()
    elif engine == "temporal" and bench.temporal is None:
        reason = _start_temporal(bench, stops)
    if reason is not None:
        print(f"skipped {engine}: {reason}")
    return reason


def _psycopg_missing() -> str | None:
    """Why PostgresJournal cannot be used here, or None."""
    try:
        import psycopg  # noqa: F401, PLC0415
    except ImportError:
        return "psycopg is not installed (pip install 'toolreel[postgres]')"
    return None


def _start_postgres(bench: Bench, stops: list[Callable[[], None]]) -> str | None:
    """A throwaway durable server for the PostgreSQL engines, or why there is none."""
    import postgres_server  # noqa: PLC0415

    reason = _psycopg_missing()
    if reason is not None:
        return reason
    try:
        database = postgres_server.start(durable=True)  # commits reach the disk, as SQLite's
    except (RuntimeError, OSError) as exc:
        return f"cannot start a PostgreSQL server: {exc}"
    stops.append(database.stop)
    bench.dsn = database.dsn
    pid_file = database.directory / "data" / "postmaster.pid"
    bench.database_pid = int(pid_file.read_text().split()[0])
    return None


def _start_temporal(bench: Bench, stops: list[Callable[[], None]]) -> str | None:
    """A Temporal dev server for the Temporal engine, or why there is none."""
    import scale_temporal  # noqa: PLC0415

    reason = scale_temporal.unavailable()
    if reason is not None:
        return reason
    try:
        server, address = scale_temporal.start_dev_server(bench.folder / "temporal.log")
    except (RuntimeError, OSError) as exc:
        return str(exc)

    def stop() -> None:
        server.terminate()
        server.wait()

    stops.append(stop)
    bench.temporal = (address, server.pid)
    return None


def passes(bench: Bench, engine: str, workers: int, sessions: int, at: int) -> list[Result]:
    """`bench.reps` passes of one engine at one worker count."""
    return [ENGINES[engine](bench, workers, sessions, at) for _ in range(bench.reps)]


def report(bench: Bench, engines: list[str], workers: list[int], round_sessions: int) -> None:
    """Print the table: throughput per engine and worker count, the per-round ratios; then
    the listing."""
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"{bench.sessions} sessions a pass, {bench.concurrency} at a time a worker, "
        f"{ROUNDS_PER_SESSION} model rounds each; best of {bench.reps} (range); "
        f"per round: {round_sessions} sessions on one worker, one at a time",
        flush=True,
    )
    cells: dict[tuple[str, int], Cell] = {}
    for engine in engines:
        for count in workers:
            runs = passes(bench, engine, count, bench.sessions, bench.concurrency)
            cells[(engine, count)] = cell([attrs.evolve(run, engine=engine) for run in runs])
    rounds = {
        engine: seconds_per_round(passes(bench, engine, 1, round_sessions, 1), ROUNDS_PER_SESSION)
        for engine in engines
    }
    print("\n".join(table(cells, rounds)))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if BASELINE not in engines:
        print("(no baseline engine in this run: no ratios)")
    if "postgres" in engines and bench.dsn:
        timed = listing(bench.dsn)
        shown = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in timed.items())
        print(f"\nsessions() at 100,000 sessions on PostgreSQL: {shown}")


def entry(argv: list[str]) -> None:
    """The bench, or one of its processes (an in-process worker, a Temporal worker or client)."""
    mode = argv[1] if len(argv) > 1 else None
    if mode == "--worker":
        engine, target, url, first, step, total, at = argv[2:9]
        worker(engine, target, url, int(first), int(step), int(total), int(at))
    elif mode == "--temporal-worker":
        import scale_temporal  # noqa: PLC0415

        scale_temporal.serve(argv[2], argv[3], argv[4], tools())
    elif mode == "--driver":
        import scale_temporal  # noqa: PLC0415

        address, queue, total, at, warm = argv[2:7]
        scale_temporal.drive(address, queue, int(total), int(at), int(warm))
    else:
        main()


if __name__ == "__main__":
    entry(sys.argv)
