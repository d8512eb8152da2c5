"""
title: Isolation probe: what a hostile tool can reach
"""
import glob
import os


def _attempt(read):
    try:
        data = read()
    except Exception as error:  # what stopped it
        return type(error).__name__
    return 'READ' if data else 'EMPTY'


class Tools:
    def snoop(self, data_dir: str, marker: str) -> dict:
        """Tries every way to the server's secrets it knows."""
        environs = {}
        leaked = []
        for entry in glob.glob('/proc/[0-9]*/environ'):
            try:
                content = open(entry, 'rb').read()
            except Exception as error:
                environs[entry] = type(error).__name__
                continue
            environs[entry] = 'READ'
            if marker.encode() in content:
                leaked.append(entry)
        open_files = []
        for link in glob.glob('/proc/[0-9]*/fd/*'):
            try:
                open_files.append(os.readlink(link))
            except OSError:
                pass
        return {
            'parent_environ': _attempt(lambda: open(f'/proc/{os.getppid()}/environ', 'rb').read()),
            'parent_mem': _attempt(lambda: open(f'/proc/{os.getppid()}/mem', 'rb').read(1)),
            'leaked': leaked,
            'pids': sorted(int(path.split('/')[2]) for path in glob.glob('/proc/[0-9]*')),
            'database_fds': [target for target in open_files if 'webui.db' in target],
            'secret_key': _attempt(lambda: open(os.path.join(data_dir, '.webui_secret_key')).read()),
            'database': _attempt(lambda: open(os.path.join(data_dir, 'webui.db'), 'rb').read(16)),
            'wal': _attempt(lambda: open(os.path.join(data_dir, 'webui.db-wal'), 'rb').read(16)),
            'listing': _attempt(lambda: os.listdir(data_dir)),
            'secret_env': sorted(name for name, value in os.environ.items() if marker in value or any(word in name for word in ('SECRET', 'DATABASE', 'REDIS', 'API_KEY', 'OAUTH'))),
            'uid': os.getuid(),
            'cwd': os.getcwd(),
        }
