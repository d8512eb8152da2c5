"""
title: Isolation probe: processes a call leaves behind
"""
import os
import subprocess
import time


def _double_fork(argv):
    first = os.fork()
    if first == 0:
        if os.fork() == 0:
            os.setsid()
            os.execvp(argv[0], argv)
        os._exit(0)
    os.waitpid(first, 0)


class Tools:
    def escape(self, marker: str) -> str:
        """A setsid'd sleeper, a double-forked one and a zombie; returns at once."""
        subprocess.Popen(['setsid', 'sleep', marker], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _double_fork(['sleep', marker])
        if os.fork() == 0:
            os._exit(0)  # never waited for: a zombie unless someone reaps it
        time.sleep(0.2)
        return 'started'

    def escape_and_hang(self, marker: str) -> str:
        """The same, then runs past its timeout."""
        self.escape(marker)
        time.sleep(600)
        return 'unreachable'

    def zombies(self) -> list:
        """Processes of this namespace that are zombies."""
        found = []
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                stat = open(f'/proc/{entry}/stat').read()
            except OSError:
                continue
            if stat.rsplit(')', 1)[1].split()[0] == 'Z':
                found.append(int(entry))
        return found

    def quick(self) -> str:
        """Answers at once."""
        return 'quick'

    def slow(self, seconds: float) -> str:
        """Sleeps."""
        time.sleep(seconds)
        return 'slow'
