"""The jagged-layout nested tensor's internals: the nested int, the subclass, its op table."""
