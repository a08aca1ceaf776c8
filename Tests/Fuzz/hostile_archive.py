#!/usr/bin/env python3
"""Rewrites a guestmode backup (tar.gz) into one of the hostile archives of
issues 14 and 18, with a manifest recomputed so only row validation can
refuse it.

    hostile_archive.py SOURCE.tar.gz CASE OUT.tar.gz [VICTIM]

Each case edits rows as NDJSON; see CASES below. Used by
Tests/EndToEndTests/HostileArchiveTests.swift and to regenerate the seed
corpus in Tests/Fuzz/corpus/."""
import hashlib, io, json, sys, tarfile

def read(path):
    entries = []
    with tarfile.open(path, 'r:*') as tar:
        for member in tar.getmembers():
            entries.append([member.name, tar.extractfile(member).read()])
    return entries

def rows(entries, table):
    for entry in entries:
        if entry[0].startswith('data/%s/' % table):
            return entry, [json.loads(line) for line in entry[1].decode().splitlines()]
    entry = ['data/%s/000001.ndjson' % table, b'']
    entries.insert(len(entries) - 1, entry)
    return entry, []

def put(entry, table_rows, raw=None):
    entry[1] = raw if raw is not None else b''.join(json.dumps(r, separators=(',', ':')).encode() + b'\n' for r in table_rows)

def edit(entries, table, column, value, raw=False):
    entry, table_rows = rows(entries, table)
    if raw:
        first = json.dumps(table_rows[0], separators=(',', ':'))
        table_rows[0][column] = '@@'
        text = json.dumps(table_rows[0], separators=(',', ':')).replace('"@@"', value)
        lines = entry[1].decode().splitlines()
        lines[0] = text
        put(entry, None, ('\n'.join(lines) + '\n').encode())
    else:
        table_rows[0][column] = value
        put(entry, table_rows)

def header(entries):
    return json.loads(entries[0][1])

def set_header(entries, value):
    entries[0][1] = json.dumps(value, indent=2, sort_keys=True).encode()

def user(entries):
    return header(entries)['users'][0]

def add(entries, table, row):
    entry, table_rows = rows(entries, table)
    table_rows.append(row)
    put(entry, table_rows)

T = '2026-01-02T00:00:00.000Z'

def cross_user(entries, victim):
    h = header(entries)
    h['guest_owner'] = victim
    set_header(entries, h)
    add(entries, 'records', {'owner_id': victim, 'collection': 'commands', 'key': 'planted', 'data': '{"x":1}',
                             'created_at': T, 'updated_at': T})

def foreign_row(entries, victim):
    add(entries, 'records', {'owner_id': victim, 'collection': 'commands', 'key': 'planted', 'data': '{"x":1}',
                             'created_at': T, 'updated_at': T})

def linked_without_identity(entries, victim):
    entry, table_rows = rows(entries, 'users')
    table_rows[0]['state'] = 'linked'
    table_rows[0]['linked_at'] = T
    put(entry, table_rows)

def duplicate(entries, victim):
    entry, table_rows = rows(entries, 'records')
    table_rows.append(dict(table_rows[0]))
    put(entry, table_rows)

def duplicate_far(entries, victim):
    # 2,500 records of 4 KB, line 1,250 repeating the key of line 1,150:
    # PostgreSQL holds about 3 MiB of rows a batch, so it finds it in the
    # second batch, whose answer it reads while the third one fills.
    entry, table_rows = rows(entries, 'records')
    first = table_rows[0]
    data = json.dumps({'note': 'x' * 4000}, separators=(',', ':'))
    table_rows = [dict(first, key='k%04d' % i, data=data) for i in range(1, 2501)]
    table_rows[1249]['key'] = table_rows[1149]['key']
    put(entry, table_rows)

def duplicate_event(entries, victim):
    entry, table_rows = rows(entries, 'events')
    table_rows.append(dict(table_rows[0]))
    put(entry, table_rows)

def duplicate_counter(entries, victim, disagreeing=False):
    entry, table_rows = rows(entries, 'counters')
    if disagreeing:
        # Found only at the end, by the rows' comparison: the repeated key comes first in the archive.
        table_rows[0]['total'] = 999
    table_rows.append(dict(table_rows[0]))
    put(entry, table_rows)

def duplicate_event_key(entries, victim):
    # Another event with the first one's idempotency key (the events table's own unique index): the counter
    # is left at one event, so the rows' comparison would find it too, but only at the end.
    entry, table_rows = rows(entries, 'events')
    table_rows[0]['idempotency_key'] = 'retried'
    table_rows.append(dict(table_rows[0], id=table_rows[0]['id'] + 1000))
    put(entry, table_rows)

def counts(entries, count, total):
    edit(entries, 'events', 'count', count)
    edit(entries, 'counters', 'total', total)

def nul_user(entries, victim):
    # "new\u0000<victim>": a C string would cut it to "new"; every mention of the attacker's id becomes it.
    attacker = user(entries).encode()
    for entry in entries:
        entry[1] = entry[1].replace(b'"' + attacker + b'"', b'"new\\u0000' + victim.encode() + b'"')

def invalid_utf8_key(entries, victim):
    entry, table_rows = rows(entries, 'records')
    table_rows[0]['key'] = '@@'
    lines = entry[1].split(b'\n')
    lines[0] = json.dumps(table_rows[0], separators=(',', ':')).encode().replace(b'@@', b'k\xff\xfe')
    entry[1] = b'\n'.join(lines)

def conflict_row(collection, data='{"x":1}', journal=1):
    return lambda e, v: add(e, 'conflict_archive', {
        'id': 1, 'journal_id': journal, 'owner_id': user(e), 'collection': collection, 'key': 'lost', 'data': data,
        'updated_at': T, 'reason': 'merge', 'archived_at': T})

def outbox_attempts(entries, victim):
    add(entries, 'outbox', {'user_id': user(entries), 'queued_at': T, 'attempts': 9223372036854775807,
                            'last_error': 'offline', 'next_attempt_at': T})

CASES = {
    'cross-user': cross_user,
    'foreign-row': foreign_row,
    'negative-usage': lambda e, v: edit(e, 'meter_usage', 'amount', -5),
    'negative-count': lambda e, v: edit(e, 'events', 'count', -3),
    'counters-disagree': lambda e, v: edit(e, 'counters', 'total', 999),
    'undeclared-collection': lambda e, v: edit(e, 'records', 'collection', 'secrets'),
    'undeclared-action': lambda e, v: edit(e, 'events', 'action', 'hack'),
    'undeclared-meter': lambda e, v: edit(e, 'meter_usage', 'meter', 'free_money'),
    'undeclared-plan': lambda e, v: edit(e, 'plans', 'plan', 'platinum'),
    'undeclared-provider': lambda e, v: add(e, 'upgrade_locks', {'user_id': user(e), 'provider': 'myspace', 'started_at': T}),
    'record-not-json': lambda e, v: edit(e, 'records', 'data', 'not json'),
    'record-not-object': lambda e, v: edit(e, 'records', 'data', '[1,2]'),
    'linked-without-identity': linked_without_identity,
    'garbage-timestamp': lambda e, v: edit(e, 'users', 'created_at', 'yesterday'),
    'lenient-timestamp': lambda e, v: edit(e, 'events', 'at', '2026-02-30T00:00:00.000Z'),
    'lock-9999': lambda e, v: add(e, 'upgrade_locks', {'user_id': user(e), 'provider': 'apple', 'started_at': '9999-12-31T00:00:00.000Z'}),
    'total-lots': lambda e, v: edit(e, 'counters', 'total', 'lots'),
    'total-1e300': lambda e, v: edit(e, 'counters', 'total', '1e300', raw=True),
    'events-id-max': lambda e, v: edit(e, 'events', 'id', 9223372036854775807),
    'usage-id-max': lambda e, v: edit(e, 'meter_usage', 'id', 9223372036854775807),
    'events-id-bound': lambda e, v: edit(e, 'events', 'id', 9007199254740991),
    'usage-id-bound': lambda e, v: edit(e, 'meter_usage', 'id', 9007199254740991),
    'non-integer-id': lambda e, v: edit(e, 'events', 'id', 'abc'),
    'fractional-id': lambda e, v: edit(e, 'events', 'id', '1.5', raw=True),
    'duplicate-row': duplicate,
    'duplicate-row-far': duplicate_far,
    'duplicate-event': duplicate_event,
    'duplicate-counter': duplicate_counter,
    'duplicate-counter-disagreeing': lambda e, v: duplicate_counter(e, v, disagreeing=True),
    'duplicate-event-key': duplicate_event_key,
    # rows the command line could not have written
    'count-max': lambda e, v: counts(e, 9223372036854775807, 9223372036854775807),
    'count-over-cli': lambda e, v: counts(e, 1000000001, 1000000001),
    'total-max': lambda e, v: edit(e, 'counters', 'total', 9223372036854775807),
    'outbox-attempts-max': outbox_attempts,
    'record-duplicate-member': lambda e, v: edit(e, 'records', 'data', '{"a":1,"a":2}'),
    'record-not-canonical': lambda e, v: edit(e, 'records', 'data', '{ "b": 1, "a": 2 }'),
    'record-deep': lambda e, v: edit(e, 'records', 'data', '{"a":' + '[' * 300 + ']' * 300 + '}'),
    'conflict-undeclared-collection': conflict_row('secrets'),
    'conflict-not-canonical': conflict_row('commands', '{"b":1,"a":2}'),
    'conflict-dangling-journal': conflict_row('commands', journal=424242),
    'nul-user': nul_user,
    'nul-key': lambda e, v: edit(e, 'records', 'key', 'k\u0000evil'),
    'invalid-utf8-key': invalid_utf8_key,
}

def write(entries, path):
    # An edited archive cannot carry a valid signature: drop it and the header's promise of one,
    # so each case reaches the row checks it is about.
    h = header(entries)
    if 'signing_key_id' in h:
        del h['signing_key_id']
        set_header(entries, h)
    body = [e for e in entries if e[0] not in ('manifest.json', 'signature.json')]
    manifest = {'format_version': header(entries)['format_version'], 'entries': [], 'tables': {}}
    for name, data in body:
        item = {'name': name, 'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
        if name.startswith('data/'):
            table = name.split('/')[1]
            count = data.count(b'\n')
            item['table'], item['rows'] = table, count
            manifest['tables'][table] = manifest['tables'].get(table, 0) + count
        manifest['entries'].append(item)
    with tarfile.open(path, 'w:gz') as tar:
        for name, data in body + [('manifest.json', json.dumps(manifest, indent=2, sort_keys=True).encode())]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o600
            tar.addfile(info, io.BytesIO(data))

if __name__ == '__main__':
    source, case, out = sys.argv[1:4]
    victim = sys.argv[4] if len(sys.argv) > 4 else 'victim'
    entries = read(source)
    if case != 'none':
        CASES[case](entries, victim)
    write(entries, out)
