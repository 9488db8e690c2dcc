"""planted.py — what the checkers that test themselves share (test_layers.py,
test_docs.py): judging a self-test's planted faults, and the exit status.

A checker returns its faults as sentences. Its self-test plants faults in a
copy, takes the sentences that were not there before, and names each planted
fault by a prefix that exactly one sentence must start with; anything else
found is a false alarm."""


def missed(found, want, what):
    """What of want (prefixes) the faults found lack, and the faults found that no prefix wants."""
    out = [f"self-test ({what}): no fault starts with {w!r}" for w in want
           if sum(f.startswith(w) for f in found) != 1]
    out += [f"self-test ({what}): unexpected fault: {f}" for f in found if not any(f.startswith(w) for w in want)]
    return out


def report(faults, ok):
    """Prints each fault (or the ok line) and returns the exit status: 0 pass, 1 fail."""
    for f in faults:
        print("FAIL:", f)
    if not faults:
        print("ok:", ok)
    return 1 if faults else 0
