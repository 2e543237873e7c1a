"""PyTorch's ``torch.fx.traceback``: the node metadata a tracer copies onto the nodes it
creates while ``preserve_node_meta()`` is on — the stack trace ``set_stack_trace`` gave, the
``custom`` dict ``annotate`` adds, and the fields of the node an Interpreter is running
(``set_current_meta``: a retrace keeps each node's provenance in ``meta["from_node"]``)."""
import copy
import traceback
from contextlib import contextmanager
from enum import Enum

__all__ = ["annotate", "preserve_node_meta", "has_preserved_node_meta", "set_stack_trace",
           "set_grad_fn_seq_nr", "reset_grad_fn_seq_nr", "format_stack", "set_current_meta",
           "get_current_meta", "NodeSource", "NodeSourceAction", "set_current_replay_node",
           "get_current_replay_node"]

current_meta = {}
current_replay_node = None
should_preserve_node_meta = False

GRADIENT_ACC_SPECIAL_STACK = "Gradient addition node due to multiple use of tensor around:"


class NodeSourceAction(Enum):
    """How a node came from another one, for provenance."""
    CREATE = "create"
    REPLACE = "replace"


class NodeSource:
    """Provenance of a node: ``a.meta["from_node"]`` holds ``NodeSource(b)`` when a pass
    created ``a`` from ``b`` (``from_node`` chains to ``b``'s own sources)."""

    class NodeInfo:
        def __init__(self, name, target, graph_id):
            self.name = name
            self.target = target
            self.graph_id = graph_id

    def __init__(self, node, pass_name="", action=None):
        self.pass_name = pass_name
        if action is None:
            action = []
        elif not isinstance(action, list):
            action = [action]
        for a in action:
            if not isinstance(a, NodeSourceAction):
                raise AssertionError(f"Expected NodeSourceAction, got {type(a)}")
        self.action = action
        if node:
            self.node_info = self.NodeInfo(name=node.name, target=str(node.target),
                                           graph_id=id(node.graph))
            self.from_node = copy.deepcopy(node.meta["from_node"]) \
                if "from_node" in node.meta else []
        else:
            self.node_info = None
            self.from_node = []

    @property
    def name(self):
        return self.node_info.name if self.node_info else ""

    @property
    def target(self):
        return self.node_info.target if self.node_info else ""

    @property
    def graph_id(self):
        return self.node_info.graph_id if self.node_info else -1

    def print_readable(self, indent=0):
        if indent > 9:
            return ""
        result = " " * indent * 4 + (
            f"(name={self.name}, pass_name={self.pass_name}, "
            f"action={self._get_action_string()}, graph_id={self.graph_id})\n")
        for item in self.from_node:
            result += item.print_readable(indent + 1)
        return result

    def _get_action_string(self):
        return "+".join([a.name.lower() for a in self.action])

    def to_dict(self):
        return {"name": self.name, "target": self.target, "graph_id": self.graph_id,
                "pass_name": self.pass_name, "action": self._get_action_string(),
                "from_node": [node.to_dict() for node in self.from_node]}

    def __repr__(self):
        return self.print_readable()

    def __eq__(self, other):
        if not isinstance(other, NodeSource):
            return False
        return self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))


@contextmanager
def preserve_node_meta(enable=True):
    """Within: nodes a tracer creates take the current metadata (``get_current_meta``)."""
    global should_preserve_node_meta, current_meta
    saved_should_preserve_node_meta = should_preserve_node_meta
    # a shallow copy: the fields of current_meta are replaced, not mutated
    saved_current_meta = current_meta.copy()
    try:
        should_preserve_node_meta = enable
        yield
    finally:
        should_preserve_node_meta = saved_should_preserve_node_meta
        current_meta = saved_current_meta


def set_stack_trace(stack):
    """The stack trace (a list of formatted frames) the next nodes record; [] clears it."""
    if should_preserve_node_meta:
        if stack:
            current_meta["stack_trace"] = "".join(stack)
        else:
            # an empty stack must not leave the previous one on later nodes
            current_meta.pop("stack_trace", None)


@contextmanager
def annotate(annotation_dict):
    """Within: nodes traced get ``annotation_dict``'s items in ``node.meta["custom"]``."""
    has_custom = "custom" in current_meta
    old_custom = copy.copy(current_meta.get("custom", {}))
    try:
        if not has_custom:
            current_meta["custom"] = {}
        current_meta["custom"].update(annotation_dict)
        yield
    finally:
        if has_custom:
            current_meta["custom"] = old_custom
        else:
            del current_meta["custom"]


def set_grad_fn_seq_nr(seq_nr):
    """Record the autograd node sequence number the next (backward) nodes come from."""
    if should_preserve_node_meta:
        current_meta["grad_fn_seq_nr"] = current_meta.get("grad_fn_seq_nr", []) + [seq_nr]
        current_meta["in_grad_fn"] = current_meta.get("in_grad_fn", 0) + 1


def reset_grad_fn_seq_nr():
    current_level = current_meta.get("in_grad_fn", 0)
    if current_level <= 0:
        raise AssertionError(f"Expected in_grad_fn > 0, got {current_level}")
    if current_level == 1:
        del current_meta["in_grad_fn"]
        del current_meta["grad_fn_seq_nr"]
    else:
        current_meta["in_grad_fn"] = current_level - 1
        current_meta["grad_fn_seq_nr"] = current_meta["grad_fn_seq_nr"][:-1]


def format_stack():
    """The preserved stack trace (as a one-element list), else the Python stack's frames."""
    if should_preserve_node_meta:
        return [current_meta.get("stack_trace", "")]
    return traceback.format_list(traceback.extract_stack()[:-1])


def has_preserved_node_meta():
    return should_preserve_node_meta


@contextmanager
def set_current_meta(node, pass_name=""):
    """Within (while preserving): the current metadata is ``node``'s, with ``from_node``
    naming it, so that the nodes traced from it inherit its fields and provenance."""
    global current_meta
    if should_preserve_node_meta and node.meta:
        saved_meta = current_meta
        try:
            current_meta = node.meta.copy()
            # overwritten, not appended: the new NodeSource chains node's own sources
            current_meta["from_node"] = [NodeSource(node, pass_name, NodeSourceAction.CREATE)]
            yield
        finally:
            current_meta = saved_meta
    else:
        yield


def get_current_meta():
    return current_meta


@contextmanager
def set_current_replay_node(node):
    """Within: nodes traced are a functionalization replay of ``node`` (its ``custom`` and
    stack trace win)."""
    global current_replay_node
    saved_current_replay_node = current_replay_node
    try:
        current_replay_node = node
        yield
    finally:
        current_replay_node = saved_current_replay_node


def get_current_replay_node():
    return current_replay_node
