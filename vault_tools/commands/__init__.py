"""The operations on a vault, one module per family.

Each operation is a plain function taking a `Workspace` (the vault opened for one
command) and parsed values, and returning what it did; none prints. Every write
happens under the ledger lock, after the whole vault has been read and checked,
and every input is validated before the first byte is written. Order of writes:
the note first, then its ledger events; a crash in between leaves a note the
watcher's reconcile recognises and finishes.
"""
