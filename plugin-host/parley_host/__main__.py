"""Worker entry: `python -m parley_host [--memory-limit-mb N] [--site DIR]`.

The protocol uses private copies of stdin/stdout; fd 0 becomes /dev/null and
fd 1 is pointed at stderr, so tool code that prints or reads cannot corrupt it.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys


def _take_protocol_fds() -> tuple[int, int]:
    read_fd, write_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return read_fd, write_fd


def _limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    import resource

    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _isolate_imports(site_dir: str | None) -> None:
    # `-m` puts the working directory first on sys.path; tool imports must not see it.
    cwd = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry not in ('', '.', cwd)]
    os.environ.pop('PYTHONPATH', None)
    if site_dir:
        import site

        # Requirements installed by the host: after the interpreter's own packages, so
        # a tool's requirement can never replace what the host itself runs on.
        version = f'python{sys.version_info.major}.{sys.version_info.minor}'
        site.addsitedir(os.path.join(site_dir, 'lib', version, 'site-packages'))


def _die_with_parent() -> None:
    # SIGKILL when the process that started us goes (Node, bwrap or unshare), even killed with -9.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def _pydantic_problem() -> str | None:
    try:
        import pydantic
    except ImportError as error:
        return f'pydantic is not importable by {sys.executable} ({error})'
    if not str(getattr(pydantic, 'VERSION', '0')).startswith('2.'):
        return f'pydantic 2 is required, {sys.executable} has pydantic {pydantic.VERSION}'
    return None


def main() -> None:
    parser = argparse.ArgumentParser(prog='parley_host')
    parser.add_argument('--memory-limit-mb', type=int, default=0)
    parser.add_argument('--site', default=None)
    parser.add_argument('--end-strays', action='store_true')
    options = parser.parse_args()
    _die_with_parent()

    read_fd, write_fd = _take_protocol_fds()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format='%(name)s: %(message)s')
    _isolate_imports(options.site)

    from .protocol import encode

    problem = _pydantic_problem()
    if problem:
        os.write(write_fd, encode({'type': 'fatal', 'code': 'pydantic_missing', 'message': problem}))
        os._exit(3)
    _limit_memory(options.memory_limit_mb)

    import pydantic

    # The first model class built in a process loads pydantic's plugin registry
    # (importlib.metadata, some 20 ms): pay that here, not in the first tool load.
    pydantic.create_model('ParleyWarmUp', ready=(bool, True))

    from . import PROTOCOL_VERSION
    from .protocol import Channel
    from .server import Host

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    channel = Channel(read_fd, write_fd, loop)
    Host(channel, end_strays=options.end_strays)
    channel.on_close = lambda: os._exit(0)  # Node closed our stdin: nothing more will come (run by the reader thread)
    channel.send(
        {
            'type': 'ready',
            'pid': os.getpid(),
            'protocol': PROTOCOL_VERSION,
            'python': sys.version.split()[0],
            'executable': sys.executable,
            'pydantic': pydantic.VERSION,
        }
    )
    channel.start()
    loop.run_forever()


if __name__ == '__main__':
    main()
