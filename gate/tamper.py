# Runner tampering in Python (SPEC §7.6), read with Python's own ast: gate/tamper.go runs
# this script and reads its findings. It never imports or runs the files it reads.
#
# Input (stdin): a JSON list of [path, name, mode]: the file to read, the name to report it
# by, and "impl" (implementation code, which may not reach into the test runner) or
# "harness" (test files and test support, which may not rewrite what the runner reports).
# Output (stdout): one JSON object a line, {"file", "line", "what"}. A file that does not
# parse is skipped: its syntax error is the runner's to report.

import ast
import json
import sys

# Top-level modules of the test runner.
RUNNER = {"pytest", "_pytest", "pluggy"}

# What of unittest runs tests and records their results, rather than writes them.
UNITTEST_INTERNAL = (
    "unittest.result", "unittest.runner", "unittest.TestResult", "unittest.TextTestResult",
    "unittest.TextTestRunner", "unittest.case.TestResult",
)

# The hooks through which a plugin sees or makes a test's report.
REPORT_ATTRS = {"outcome", "longrepr", "passed", "failed", "skipped", "wasxfail", "exitstatus"}

# Names of pytest's own classes and of the attributes of its reports: code that names them
# has found pytest, however it got hold of it.
PYTEST_NAMES = {"from_item_and_call", "TestReport", "CollectReport", "longrepr", "force_result",
                "LogXML", "pytest_runtest_makereport", "pytest_report_teststatus"}

# Calls that write a file, or move one over another.
WRITES = {"open", "write_text", "write_bytes", "replace", "rename", "truncate", "unlink", "remove",
          "copy", "copyfile", "move", "dump"}


def whose(attr):
    if attr == "exitstatus":
        return "the session's exit status"
    return "a report's " + attr


def runner_module(name):
    """Whether a dotted module name is the runner's (pytest, _pytest.reports, pytest_cov)."""
    if not isinstance(name, str) or not name:
        return False
    top = name.split(".")[0]
    return top in RUNNER or top.startswith("pytest_") or top.startswith("_pytest")


def unittest_internal(name):
    return any(name == p or name.startswith(p + ".") for p in UNITTEST_INTERNAL)


def const_str(node):
    """The value of a string constant, or of a concatenation or f-string of constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = const_str(node.left), const_str(node.right)
        if a is not None and b is not None:
            return a + b
    if isinstance(node, ast.JoinedStr):
        parts = [const_str(v) for v in node.values]
        if all(p is not None for p in parts):
            return "".join(parts)
    return None


def literal(node):
    """Whether an expression is a literal: a value pytest cannot take for a hook, since it
    takes only routines."""
    if node is None:
        return False
    if isinstance(node, ast.JoinedStr):
        return True
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


class Scan:
    def __init__(self, name, tree, mode):
        self.name, self.tree, self.mode = name, tree, mode
        self.found = []
        self.seen = set()
        self.alias = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.alias[top] = top
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    self.alias[a.asname or a.name] = node.module + "." + a.name
        self.parent = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.funcs = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.funcs.setdefault(node.name, node)

    def add(self, node, what):
        key = (node.lineno, what)
        if key not in self.seen:
            self.seen.add(key)
            self.found.append({"file": self.name, "line": node.lineno, "what": what})

    def imported(self, node):
        """The dotted name an expression stands for when it starts with an imported name."""
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.alias:
            return self.dotted(node)
        return None

    def dotted(self, node):
        """The dotted name an expression stands for, through the module's imports."""
        if isinstance(node, ast.Name):
            return self.alias.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            if base is not None:
                return base + "." + node.attr
        return None

    def reachable(self, roots):
        """The functions of the module that roots call by name, roots included."""
        out, todo = [], list(roots)
        ids = set()
        while todo:
            f = todo.pop()
            if id(f) in ids:
                continue
            ids.add(id(f))
            out.append(f)
            for n in ast.walk(f):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.funcs:
                    todo.append(self.funcs[n.func.id])
        return out

    def targets(self, node):
        if isinstance(node, ast.Assign):
            return node.targets
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        if isinstance(node, ast.Delete):
            return node.targets
        return []

    def flatten(self, targets):
        for t in targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                yield from self.flatten(t.elts)
            elif isinstance(t, ast.Starred):
                yield from self.flatten([t.value])
            else:
                yield t

    def patched(self, target):
        """What an assignment target patches: the runner, unittest or builtins, or None."""
        if isinstance(target, ast.Subscript):
            if isinstance(target.value, ast.Name) and target.value.id == "__builtins__":
                return "builtins"
            d = self.imported(target.value)
            if d == "builtins.__dict__":
                return d
            if d == "sys.modules" and runner_module(const_str(target.slice)):
                return "sys.modules[%r]" % const_str(target.slice)
            return None
        if not isinstance(target, ast.Attribute):
            return None
        raw = self.dotted(target)
        if raw and raw.startswith("__builtins__."):
            return raw
        d = self.imported(target)
        if d is None:
            return None
        if d.startswith("builtins."):
            return d
        if runner_module(d) or d.startswith("unittest."):
            return d
        return None

    # Where pytest looks for hooks: the names a module binds.

    def bindings(self):
        """The names the module binds where pytest looks for hooks and for pytest_plugins,
        by any means but def: (node, name, value), value None when it cannot be told (an import, a loop, an unpacking). Pytest takes every routine named pytest_*
        of a plugin for a hook and reads pytest_plugins from the module's namespace, so a
        name bound at module level (or in a class body, or in a function that declares it
        global) counts, whatever binds it: an assignment, an import, globals()[...],
        setattr, an attribute of the module."""
        out = []
        ns = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and self.namespace(node.value):
                for t in self.flatten(self.targets(node)):
                    if isinstance(t, ast.Name):
                        ns.add(t.id)
        self.scope(self.tree, True, set(), out)
        for node in ast.walk(self.tree):
            value = getattr(node, "value", None)
            if isinstance(node, (ast.Assign, ast.AugAssign)) or isinstance(node, ast.AnnAssign) and value is not None:
                for t in self.flatten(self.targets(node)):
                    if isinstance(t, ast.Subscript) and self.namespace(t.value, ns):
                        out.append((t, const_str(t.slice), value))
                    elif isinstance(t, ast.Attribute):
                        out.append((t, t.attr, value))
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id == "setattr" and len(node.args) >= 3:
                out.append((node, const_str(node.args[1]), node.args[2]))
            elif isinstance(f, ast.Attribute) and self.namespace(f.value, ns):
                if f.attr in ("__setitem__", "setdefault") and len(node.args) >= 2:
                    out.append((node, const_str(node.args[0]), node.args[1]))
                elif f.attr == "update":
                    for k in node.keywords:
                        out.append((node, k.arg, k.value))
                    for a in node.args:
                        if isinstance(a, ast.Dict):
                            for k, v in zip(a.keys, a.values):
                                out.append((node, const_str(k) if k is not None else None, v))
        return [b for b in out if isinstance(b[1], str) and b[1].startswith("pytest_")]

    def namespace(self, node, names=()):
        """Whether an expression is a namespace whose keys are a module's names: globals(),
        vars(...), an object's __dict__, or a name bound to one of those."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id in ("globals", "vars", "locals")
        if isinstance(node, ast.Attribute):
            return node.attr == "__dict__"
        return isinstance(node, ast.Name) and node.id in names

    def scope(self, node, outer, glob, out):
        """The names bound in node's scope: outer for the module and the class bodies in
        it, glob the names a function declares global."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                g = {n for s in ast.walk(child) if isinstance(s, ast.Global) for n in s.names}
                self.scope(child, False, g, out)
            elif isinstance(child, ast.ClassDef):
                self.scope(child, outer, glob, out)
            elif isinstance(child, ast.comprehension):
                # A comprehension's own variables are its own; what it computes is not.
                for n in [child.iter] + child.ifs:
                    self.scope(n, outer, glob, out)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for a in child.names:
                    name = a.asname or a.name.split(".")[0]
                    if outer or name in glob:
                        out.append((child, name, None))
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                p = self.parent.get(child)
                if isinstance(p, ast.AnnAssign) and p.value is None:
                    continue  # An annotation alone binds nothing.
                if outer or child.id in glob:
                    value = None
                    if isinstance(p, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                        value = p.value
                    out.append((child, child.id, value))
            else:
                self.scope(child, outer, glob, out)

    def hooks(self):
        """Refuses pytest hooks and pytest_plugins bound by other means than def."""
        for node, name, value in self.bindings():
            if name == "pytest_plugins":
                self.add(node, "sets pytest_plugins, which has pytest load plugins, in code that is not a test")
            elif not literal(value):
                self.add(node, "binds %s, a pytest hook, in code that is not a test" % name)

    # Implementation code: nothing of the runner.

    def impl(self):
        attrs = [self.dotted(n) for n in ast.walk(self.tree) if isinstance(n, ast.Attribute)]
        argv = "sys.argv" in attrs or "sys.orig_argv" in attrs
        # A module that reads sys.modules and compares a name with the runner's module looks
        # it up, however it walks the table.
        modules = "sys.modules" in attrs
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if runner_module(a.name):
                        self.add(node, "imports %s, the test runner's own code" % a.name)
                    elif unittest_internal(a.name):
                        self.add(node, "imports %s, where unittest runs tests and records their results" % a.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if runner_module(node.module):
                    self.add(node, "imports from %s, the test runner's own code" % node.module)
                else:
                    for a in node.names:
                        full = node.module + "." + a.name
                        if unittest_internal(full) or unittest_internal(node.module):
                            self.add(node, "imports %s, where unittest runs tests and records their results" % full)
            elif isinstance(node, (ast.Name, ast.Attribute)):
                d = self.imported(node)
                if d and unittest_internal(d) and not isinstance(getattr(node, "ctx", None), ast.Store):
                    self.add(node, "uses %s, where unittest runs tests and records their results" % d)
                if isinstance(node, ast.Attribute) and node.attr in PYTEST_NAMES:
                    self.add(node, "uses %s, a name of the test runner's own code" % node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("pytest_"):
                self.add(node, "declares %s, a pytest hook, in code that is not a test" % node.name)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.string(node, node.value, argv)
                if modules and self.compared(node):
                    self.lookup(node, node)
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)):
                s = const_str(node)
                if s is not None:
                    self.string(node, s, argv)
            elif isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Subscript) and self.dotted(node.value) == "sys.modules":
                self.lookup(node, node.slice)
            elif isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
                if any(self.dotted(c) in ("sys.modules", "sys.modules.keys") or
                       isinstance(c, ast.Call) and self.dotted(c.func) == "sys.modules.keys"
                       for c in node.comparators):
                    self.lookup(node, node.left)
            for t in self.flatten(self.targets(node)):
                p = self.patched(t)
                if p:
                    self.add(t, "patches %s" % p)
        self.atexit()
        self.hooks()

    def compared(self, node):
        """Whether a constant is compared with something: a name matched against it."""
        p = self.parent.get(node)
        if isinstance(p, ast.Compare):
            return True
        if isinstance(p, ast.Call) and isinstance(p.func, ast.Attribute):
            return p.func.attr in ("startswith", "endswith", "match", "fullmatch", "search", "__eq__", "__contains__")
        return isinstance(p, (ast.Tuple, ast.List, ast.Set)) and self.compared(p)

    def lookup(self, node, key):
        s = const_str(key)
        if runner_module(s):
            self.add(node, "looks up the test runner's module %r" % s)

    def string(self, node, s, argv):
        if s in PYTEST_NAMES:
            self.add(node, "names %s, a name of the test runner's own code" % s)
        if s.startswith("PYTEST"):
            self.add(node, "reads the test runner's environment (%s)" % s)
        low = s.lower()
        if low.startswith("--junit") or "junitxml" in low or low.startswith("--report-log") or low.startswith("--result-log"):
            self.add(node, "looks for the test runner's report (%s)" % s)
        elif argv and ("junit" in low or low.endswith(".xml")):
            self.add(node, "looks on the command line for the test runner's report (%s)" % s)

    def call(self, node):
        d = self.dotted(node.func)
        name = node.func.attr if isinstance(node.func, ast.Attribute) else (node.func.id if isinstance(node.func, ast.Name) else "")
        if name in ("setattr", "delattr") and node.args:
            p = self.patched(ast.Attribute(value=node.args[0], attr="x", ctx=ast.Store()))
            if p is None and isinstance(node.args[0], ast.Name) and node.args[0].id == "__builtins__":
                p = "builtins"
            if p:
                self.add(node, "patches %s" % p.rsplit(".", 1)[0])
        if d in ("builtins.__dict__.update", "__builtins__.update"):
            self.add(node, "patches builtins")
        if d in ("importlib.import_module", "importlib.__import__", "__import__", "importlib.util.find_spec",
                 "pkgutil.find_loader", "importlib.find_loader", "sys.modules.get", "sys.modules.pop",
                 "sys.modules.setdefault", "sys.modules.__getitem__") and node.args:
            self.lookup(node, node.args[0])

    def atexit(self):
        """Handlers registered with atexit that write files: a report rewritten at exit."""
        handlers = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and self.dotted(node.func) == "atexit.register" and node.args:
                handlers.append((node, node.args[0]))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    if self.dotted(dec) == "atexit.register":
                        handlers.append((dec, node))
        for where, h in handlers:
            bodies = []
            if isinstance(h, ast.Name) and h.id in self.funcs:
                bodies = self.reachable([self.funcs[h.id]])
            elif isinstance(h, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies = self.reachable([h])
            elif isinstance(h, ast.Call) and isinstance(h.func, ast.Name) and h.func.id in self.funcs:
                bodies = self.reachable([self.funcs[h.func.id]])
            for b in bodies:
                if any(self.writes(n) for n in ast.walk(b)):
                    self.add(where, "registers an atexit handler that writes files (a report rewritten at exit)")
                    break

    def writes(self, node):
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
        return name in WRITES

    # Harness: it may set tests up, not rewrite what they report.

    def harness(self):
        hooks = [(f.name, f) for f in self.funcs.values() if f.name.startswith("pytest_")]
        for node in ast.walk(self.tree):
            # Methods of plugin classes are hooks too.
            if isinstance(node, ast.ClassDef):
                for f in node.body:
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("pytest_") and (f.name, f) not in hooks:
                        hooks.append((f.name, f))
        # So is a function or a lambda bound to a hook's name by assignment.
        for _, name, value in self.bindings():
            if isinstance(value, ast.Name) and value.id in self.funcs:
                hooks.append((name, self.funcs[value.id]))
            elif isinstance(value, ast.Lambda):
                hooks.append((name, value))
        for name, hook in hooks:
            for f in self.reachable([hook]):
                self.rewrites(name, f)
            if name == "pytest_report_teststatus":
                returns = [n for n in ast.walk(hook) if isinstance(n, ast.Return)]
                if isinstance(hook, ast.Lambda):
                    returns.append(ast.Return(value=hook.body, lineno=hook.lineno))
                for n in returns:
                    if n.value is not None and not (isinstance(n.value, ast.Constant) and n.value.value is None):
                        self.add(n, "pytest_report_teststatus decides how a test's outcome is reported")
        for node in ast.walk(self.tree):
            for t in self.flatten(self.targets(node)):
                if isinstance(t, ast.Attribute):
                    d = self.imported(t)
                    if d and runner_module(d):
                        self.add(t, "patches %s, the test runner's own code" % d)
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
                if name == "setattr" and node.args:
                    d = self.imported(node.args[0])
                    if d is None:
                        s = const_str(node.args[0])
                        d = s if s and runner_module(s) else None
                    if d and runner_module(d):
                        self.add(node, "patches %s, the test runner's own code" % d)

    def rewrites(self, hook, f):
        for n in ast.walk(f):
            for t in self.flatten(self.targets(n)):
                if isinstance(t, ast.Attribute) and t.attr in REPORT_ATTRS:
                    self.add(t, "%s sets %s" % (hook, whose(t.attr)))
            if isinstance(n, ast.Call):
                fn = n.func
                name = fn.attr if isinstance(fn, ast.Attribute) else (fn.id if isinstance(fn, ast.Name) else "")
                if name in ("force_result", "force_exception"):
                    self.add(n, "%s forces the hook's result (%s)" % (hook, name))
                elif name == "setattr" and len(n.args) >= 2 and const_str(n.args[1]) in REPORT_ATTRS:
                    self.add(n, "%s sets %s" % (hook, whose(const_str(n.args[1]))))
                for k in n.keywords:
                    if k.arg in ("outcome", "longrepr"):
                        self.add(n, "%s makes a report with an outcome of its own" % hook)


def main():
    for path, name, mode in json.load(sys.stdin):
        try:
            with open(path, "rb") as f:
                src = f.read()
            tree = ast.parse(src, filename=name)
        except (SyntaxError, ValueError, OSError, RecursionError):
            continue
        s = Scan(name, tree, mode)
        try:
            if mode == "harness":
                s.harness()
            else:
                s.impl()
        except RecursionError:
            # Nested deeper than the reading goes: what it hides cannot be told.
            s.found.append({"file": name, "line": 1, "what": "is nested too deeply to be read for runner tampering"})
        for item in s.found:
            sys.stdout.write(json.dumps(item) + "\n")


main()
