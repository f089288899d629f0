# Reads a Python test file on standard input, as data (it is never imported), and prints, as
# a JSON list, the modules whose calls gave the value a test's line read an attribute of:
# argv[1] is the line, argv[2] the attribute. The name read on that line is followed back to
# its last assignment before the line in the same function; the calls in that assignment
# whose callee is a name imported by the file give their modules.
import ast
import json
import sys


def imported(tree):
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                names[a.asname or top] = a.name if a.asname else top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                names[a.asname or a.name] = node.module
    return names


def enclosing(tree, line):
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if found is None or node.lineno > found.lineno:
                found = node
    return found


def targets(node):
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target]
    return []


def callee(call):
    f = call.func
    while True:
        if isinstance(f, ast.Attribute) or isinstance(f, ast.Subscript):
            f = f.value
        elif isinstance(f, ast.Call):
            f = f.func
        else:
            return f.id if isinstance(f, ast.Name) else None


def main():
    line, attr = int(sys.argv[1]), sys.argv[2]
    tree = ast.parse(sys.stdin.buffer.read())
    imports = imported(tree)
    func = enclosing(tree, line)
    modules = set()
    if func is not None:
        read = {n.value.id for n in ast.walk(func)
                if isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name)
                and n.lineno <= line <= n.end_lineno}
        for name in read:
            last = None
            for n in ast.walk(func):
                if getattr(n, "end_lineno", None) is not None and n.end_lineno < line and any(isinstance(t, ast.Name) and t.id == name for t in targets(n)):
                    if last is None or n.lineno > last.lineno:
                        last = n
            if last is None:
                continue
            for c in ast.walk(last.value):
                if isinstance(c, ast.Call):
                    root = callee(c)
                    if root in imports:
                        modules.add(imports[root])
    json.dump(sorted(modules), sys.stdout)


main()
