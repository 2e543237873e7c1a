"""Entries of PyTorch's op database that ember still fails (tests/test_op_db.py), with why.

Keys are "<entry id>:<forward|gradient|errors>". Each is a strict xfail: when a fix makes one
pass, its line must go, so this table only shrinks.
"""
EXPECTED = {
}
