# Mutants of a Python source read from standard input, made on Python's own syntax tree:
# a JSON list of {line, op, start, end, replacement}, start and end byte offsets.
import ast, json, sys

src = sys.stdin.buffer.read()
lines = src.split(b"\n")
starts = [0]
for l in lines:
    starts.append(starts[-1] + len(l) + 1)

def off(line, col):
    return starts[line - 1] + col

def seg(node):
    return src[off(node.lineno, node.col_offset):off(node.end_lineno, node.end_col_offset)].decode()

FLIPS = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
         ast.FloorDiv: ("//", "*"), ast.Mod: ("%", "*")}
CMP = {ast.Lt: ("<", ">="), ast.GtE: (">=", "<"), ast.Gt: (">", "<="), ast.LtE: ("<=", ">"),
       ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}

def short(s):
    s = " ".join(s.split())
    return s if len(s) <= 60 else s[:57] + "..."

out = []
def between(a_end, b_start, op):
    # the operator's bytes between two operands
    gap = src[a_end:b_start]
    i = gap.find(op.encode())
    return None if i < 0 else a_end + i

for node in ast.walk(ast.parse(src)):
    if isinstance(node, ast.BinOp) and type(node.op) in FLIPS:
        op, to = FLIPS[type(node.op)]
        p = between(off(node.left.end_lineno, node.left.end_col_offset), off(node.right.lineno, node.right.col_offset), op)
        if p is not None:
            out.append({"line": node.lineno, "op": op + " -> " + to, "start": p, "end": p + len(op), "replacement": to})
    elif isinstance(node, ast.Compare):
        left = node.left
        for cop, right in zip(node.ops, node.comparators):
            if type(cop) in CMP:
                op, to = CMP[type(cop)]
                p = between(off(left.end_lineno, left.end_col_offset), off(right.lineno, right.col_offset), op)
                if p is not None:
                    out.append({"line": node.lineno, "op": op + " -> " + to, "start": p, "end": p + len(op), "replacement": to})
            left = right
    elif isinstance(node, ast.BoolOp):
        op, to = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        a, b = node.values[0], node.values[1]
        p = between(off(a.end_lineno, a.end_col_offset), off(b.lineno, b.col_offset), op)
        if p is not None:
            out.append({"line": node.lineno, "op": op + " -> " + to, "start": p, "end": p + len(op), "replacement": to})
    if isinstance(node, (ast.If, ast.While)):
        t = node.test
        out.append({"line": t.lineno, "op": "negate condition " + short(seg(t)), "start": off(t.lineno, t.col_offset),
                    "end": off(t.end_lineno, t.end_col_offset), "replacement": "not (" + seg(t) + ")"})
    elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        v = node.value
        out.append({"line": node.lineno, "op": "return None instead of " + short(seg(v)), "start": off(v.lineno, v.col_offset),
                    "end": off(v.end_lineno, v.end_col_offset), "replacement": "None"})
    elif isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign)) and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        out.append({"line": node.lineno, "op": "drop " + short(seg(node)), "start": off(node.lineno, node.col_offset),
                    "end": off(node.end_lineno, node.end_col_offset), "replacement": "pass"})

out.sort(key=lambda m: (m["start"], m["op"]))
json.dump(out, sys.stdout)
