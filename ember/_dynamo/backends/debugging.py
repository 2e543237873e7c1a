"""``ExplainOutput`` (PyTorch's torch._dynamo.backends.debugging): what ``explain`` reports."""
import dataclasses

__all__ = ["ExplainOutput"]


@dataclasses.dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list = None
    out_guards: list = None
    compile_times: str = None

    def __str__(self):
        out = f"Graph Count: {self.graph_count}\n"
        out += f"Graph Break Count: {self.graph_break_count}\n"
        out += f"Op Count: {self.op_count}\n"
        out += "Break Reasons:\n"
        for i, r in enumerate(self.break_reasons):
            out += f"  Break Reason {i + 1}:\n"
            out += f"    Reason: {r.reason}\n"
            out += "    User Stack:\n"
            for fs in r.user_stack:
                out += f"      <FrameSummary file {fs.filename}, line {fs.lineno} in {fs.name}>\n"
        if self.ops_per_graph is not None:
            out += "Ops per Graph:\n"
            for i, ops in enumerate(self.ops_per_graph):
                out += f"  Ops {i + 1}:\n"
                for op in ops:
                    out += f"    {op}\n"
        if self.out_guards is not None:
            out += "Out Guards:\n"
            for i, g in enumerate(self.out_guards):
                out += f"  Guard {i + 1}:\n"
                out += f"    {g}\n"
        if self.compile_times is not None:
            out += f"Compile Times: {self.compile_times}\n"
        return out
