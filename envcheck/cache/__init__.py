"""envcheck's caches, all in the user's own cache folder and never inside the checked environment.

- signed.py: where the cache lives, and entries signed with the user's key and verified before they are trusted;
- pack_stamp.py: the stamp of a rule pack (envcheck's code and every rule and table file), the cached pack's key;
- file_values.py: values computed from files (ELF needs, RECORD's shared objects), keyed by path, mtime and size.

Probe results (sources/probes/results_cache.py: they read the snapshot, which sits above this package), the rule pack
(envcheck/rules/rule_pack.py), the requirement walk (derived/walk_memo.py) and the replayed check
(pipeline/replay.py) keep their entries through signed.py.
"""
