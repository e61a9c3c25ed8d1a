"""accy's async runtime (libaccy_async_runtime.so): the `mlirAsyncRuntime*` ABI that the
CPU target's parallel loops call, driven through ctypes as generated code would.

Tasks are ctypes callbacks standing in for coroutine resume functions: each records
which thread ran it. Scenarios that depend on the pool's size run in a fresh process
with ACCY_NUM_THREADS set (the pool is created once per process).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
from ctypes import c_bool, c_int, c_int64, c_void_p
from pathlib import Path

import pytest

from accy.runtime.libraries import async_runtime_library_path

RESUME = ctypes.CFUNCTYPE(None, c_void_p)


def load() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(async_runtime_library_path()))
    for name, result, args in [
        ("mlirAsyncRuntimeCreateToken", c_void_p, []),
        ("mlirAsyncRuntimeCreateValue", c_void_p, [c_int64]),
        ("mlirAsyncRuntimeCreateGroup", c_void_p, [c_int64]),
        ("mlirAsyncRuntimeAddRef", None, [c_void_p, c_int64]),
        ("mlirAsyncRuntimeDropRef", None, [c_void_p, c_int64]),
        ("mlirAsyncRuntimeAddTokenToGroup", c_int64, [c_void_p, c_void_p]),
        ("mlirAsyncRuntimeEmplaceToken", None, [c_void_p]),
        ("mlirAsyncRuntimeEmplaceValue", None, [c_void_p]),
        ("mlirAsyncRuntimeSetTokenError", None, [c_void_p]),
        ("mlirAsyncRuntimeIsTokenError", c_bool, [c_void_p]),
        ("mlirAsyncRuntimeIsGroupError", c_bool, [c_void_p]),
        ("mlirAsyncRuntimeAwaitToken", None, [c_void_p]),
        ("mlirAsyncRuntimeAwaitValue", None, [c_void_p]),
        ("mlirAsyncRuntimeAwaitAllInGroup", None, [c_void_p]),
        ("mlirAsyncRuntimeGetValueStorage", c_void_p, [c_void_p]),
        ("mlirAsyncRuntimeExecute", None, [c_void_p, RESUME]),
        ("mlirAsyncRuntimeAwaitTokenAndExecute", None, [c_void_p, c_void_p, RESUME]),
        ("mlirAsyncRuntimeAwaitAllInGroupAndExecute", None, [c_void_p, c_void_p, RESUME]),
        ("mlirAsyncRuntimGetNumWorkerThreads", c_int64, []),
        ("accy_async_runtime_reserve", c_int, [c_int]),
    ]:
        function = getattr(lib, name)
        function.restype = result
        function.argtypes = args
    return lib


@pytest.fixture(scope="module")
def rt() -> ctypes.CDLL:
    return load()


def test_tasks_complete_their_tokens_and_the_group(rt) -> None:
    # 64 tasks, each emplaces its own token; the group of 64 is ready after the last.
    ran: list[int] = []
    lock = threading.Lock()
    tokens = [rt.mlirAsyncRuntimeCreateToken() for _ in range(64)]
    group = rt.mlirAsyncRuntimeCreateGroup(64)
    ranks = [rt.mlirAsyncRuntimeAddTokenToGroup(t, group) for t in tokens]
    assert ranks == list(range(64))
    for t in tokens:  # the caller's references; the tasks keep theirs until they emplace
        rt.mlirAsyncRuntimeDropRef(t, 1)

    @RESUME
    def task(handle):
        with lock:
            ran.append(handle)
        rt.mlirAsyncRuntimeEmplaceToken(handle)

    for t in tokens:
        rt.mlirAsyncRuntimeExecute(t, task)
    rt.mlirAsyncRuntimeAwaitAllInGroup(group)
    assert sorted(ran) == sorted(tokens)
    assert not rt.mlirAsyncRuntimeIsGroupError(group)
    rt.mlirAsyncRuntimeDropRef(group, 1)


def test_an_error_token_marks_the_group(rt) -> None:
    good, bad = rt.mlirAsyncRuntimeCreateToken(), rt.mlirAsyncRuntimeCreateToken()
    group = rt.mlirAsyncRuntimeCreateGroup(2)
    rt.mlirAsyncRuntimeAddTokenToGroup(good, group)
    rt.mlirAsyncRuntimeAddTokenToGroup(bad, group)
    rt.mlirAsyncRuntimeEmplaceToken(good)
    rt.mlirAsyncRuntimeSetTokenError(bad)
    rt.mlirAsyncRuntimeAwaitAllInGroup(group)  # ready: returns at once
    assert rt.mlirAsyncRuntimeIsGroupError(group)
    assert rt.mlirAsyncRuntimeIsTokenError(bad) and not rt.mlirAsyncRuntimeIsTokenError(good)
    for obj in (good, bad, group):
        rt.mlirAsyncRuntimeDropRef(obj, 1)


def test_await_and_execute_runs_after_the_token_or_at_once(rt) -> None:
    order: list[str] = []

    @RESUME
    def resume(handle):
        order.append(ctypes.cast(handle, ctypes.c_char_p).value.decode())

    token = rt.mlirAsyncRuntimeCreateToken()
    waiting = ctypes.c_char_p(b"after emplace")
    rt.mlirAsyncRuntimeAwaitTokenAndExecute(token, ctypes.cast(waiting, c_void_p), resume)
    assert order == []  # not ready: queued on the token
    rt.mlirAsyncRuntimeEmplaceToken(token)  # runs the awaiter on this thread
    assert order == ["after emplace"]
    ready = ctypes.c_char_p(b"already ready")
    rt.mlirAsyncRuntimeAwaitTokenAndExecute(token, ctypes.cast(ready, c_void_p), resume)
    assert order == ["after emplace", "already ready"]
    empty = rt.mlirAsyncRuntimeCreateGroup(0)  # an empty group is ready
    rt.mlirAsyncRuntimeAwaitAllInGroupAndExecute(empty, ctypes.cast(ready, c_void_p), resume)
    assert order[-1] == "already ready" and len(order) == 3
    rt.mlirAsyncRuntimeDropRef(token, 1)
    rt.mlirAsyncRuntimeDropRef(empty, 1)


def test_values_own_their_storage(rt) -> None:
    value = rt.mlirAsyncRuntimeCreateValue(8)
    storage = rt.mlirAsyncRuntimeGetValueStorage(value)
    ctypes.c_int64.from_address(storage).value = 42

    @RESUME
    def produce(handle):
        rt.mlirAsyncRuntimeEmplaceValue(handle)

    rt.mlirAsyncRuntimeExecute(value, produce)
    rt.mlirAsyncRuntimeAwaitValue(value)
    assert ctypes.c_int64.from_address(rt.mlirAsyncRuntimeGetValueStorage(value)).value == 42
    rt.mlirAsyncRuntimeDropRef(value, 1)


def test_reserve_only_grows_the_pool(rt) -> None:
    before = rt.mlirAsyncRuntimGetNumWorkerThreads()
    assert rt.accy_async_runtime_reserve(1) == before
    assert rt.accy_async_runtime_reserve(before + 1) == before + 1
    assert rt.mlirAsyncRuntimGetNumWorkerThreads() == before + 1


POOL_SCENARIO = textwrap.dedent(
    """
    import ctypes, sys, threading
    sys.path.insert(0, {tests!r})
    from test_async_runtime import RESUME, load
    rt = load()
    print(rt.mlirAsyncRuntimGetNumWorkerThreads())
    threads = set()
    token = rt.mlirAsyncRuntimeCreateToken()

    @RESUME
    def task(handle):
        threads.add(threading.get_ident())
        rt.mlirAsyncRuntimeEmplaceToken(handle)

    rt.mlirAsyncRuntimeExecute(token, task)
    rt.mlirAsyncRuntimeAwaitToken(token)
    print(threading.get_ident() in threads)
    """
)


@pytest.mark.parametrize("threads, caller_runs_it", [("1", "True"), ("3", None)])
def test_the_pool_size_follows_accy_num_threads(threads: str, caller_runs_it) -> None:
    # With one thread there is no worker: the awaiting thread runs the task itself.
    code = POOL_SCENARIO.format(tests=str(Path(__file__).parent))
    env = {**os.environ, "ACCY_NUM_THREADS": threads}
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    count, ran_on_caller = out.stdout.split()
    assert count == threads
    if caller_runs_it is not None:
        assert ran_on_caller == caller_runs_it
