"""
title: Isolation probe: code left behind in a worker
"""
import builtins
import threading
import time


class Tools:
    def plant(self, __user__: dict) -> str:
        """Leaves a monkey-patch and a thread behind."""
        builtins.PARLEY_PLANTED_BY = __user__['id']
        threading.Thread(target=lambda: time.sleep(600), name='parley-leftover', daemon=True).start()
        return 'planted'

    def look(self) -> dict:
        """What an earlier call left in this worker."""
        return {
            'planted_by': getattr(builtins, 'PARLEY_PLANTED_BY', None),
            'threads': [thread.name for thread in threading.enumerate() if thread.name == 'parley-leftover'],
        }
