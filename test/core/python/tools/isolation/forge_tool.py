"""
title: Isolation probe: forged bridge calls
"""
from parley_host import bridge

KEPT = {}


async def _ask(token, method='api'):
    params = {'token': token, 'op': 'users.count', 'args': {}} if method == 'api' else {'token': token, 'event': {'type': 'status'}}
    try:
        await bridge._channel.request(method, params)
    except Exception as error:
        return str(error)
    return 'ANSWERED'


class Tools:
    async def forge(self) -> dict:
        """Calls Parley with made-up tokens, the previous call's token and its own."""
        outcome = {
            'made_up': await _ask('A' * 43),
            'request_id': await _ask(1),
            'none': await _ask(None),
            'event_made_up': await _ask('B' * 43, 'event_emitter'),
        }
        if 'token' in KEPT:
            outcome['previous_call'] = await _ask(KEPT['token'])
        KEPT['token'] = bridge.current_call.get()
        outcome['own'] = await _ask(KEPT['token'])
        return outcome
