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


# The import system's own tables in sys: the finders asked for every import, the hooks that
# make a finder for each folder, and the finders made. What is on them decides what code an
# import runs, so an implementation that changes them decides what a test module runs,
# without writing a file the integrity checks compare. Named by the attribute alone, on
# whatever object, since sys may be reached by a hidden name (__import__("sys")).
IMPORT_TABLES = {"meta_path", "path_hooks", "path_importer_cache"}

# What only reads one of those tables: a method, or a builtin it is handed to.
TABLE_READS = {"index", "count", "copy", "get", "keys", "values", "items", "__len__", "__iter__",
               "__contains__", "__getitem__"}
TABLE_READERS = {"len", "list", "tuple", "iter", "enumerate", "reversed", "sorted", "repr", "str",
                 "print", "id", "any", "all", "bool", "set", "frozenset", "dict", "zip", "isinstance"}

# Methods of the import protocol: an object whose method of these names is replaced finds or
# loads modules its own way.
IMPORT_METHODS = {"find_spec", "find_module", "exec_module", "create_module", "load_module",
                  "source_to_code", "path_hook"}

# Modules of the import system itself.
IMPORT_MODULES = {"importlib", "_frozen_importlib", "_frozen_importlib_external", "_imp"}


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
                if p and not self.replaces_import(t):  # Told as an import hook below.
                    self.add(t, "patches %s" % p)
        self.atexit()
        self.hooks()
        self.import_hooks()

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

    # Implementation code: nothing of the import system.
    #
    # Where the line is: code may use imports and read where they come from (sys.path read
    # or a folder appended to it, importlib.import_module, importlib.resources,
    # importlib.util.find_spec, spec_from_file_location and module_from_spec, a lazy import
    # through importlib.util.LazyLoader, sys.modules read or set, a finder list read); it
    # may not change how an import finds or loads a module: put a finder on sys.meta_path
    # or a hook on sys.path_hooks, add an entry to sys.path_importer_cache, replace
    # __import__, subclass importlib's finders and loaders, make a FileFinder hook, or
    # replace a method of the import protocol. Those decide what code a test module runs
    # (a test file's source served with its asserts rewritten) while the file on disk stays
    # as the integrity checks compare it. sys.path is plain path manipulation, which honest
    # packages do, and what it finds is files on disk, which the checks see.

    def import_hooks(self):
        """Refuses code that installs or replaces an import mechanism."""
        def hook(node, what):
            self.add(node, "installs an import hook (%s), which decides what code a test module runs" % what)

        # Names bound to a table (mp = sys.meta_path, from sys import meta_path): their uses
        # are the table's.
        aliases = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "sys":
                for a in node.names:
                    if a.name in IMPORT_TABLES:
                        aliases[a.asname or a.name] = "sys." + a.name
        changed = True
        while changed:
            changed = False
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Assign, ast.NamedExpr)):
                    which = self.table(node.value, aliases)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in self.flatten(targets):
                        if which and isinstance(t, ast.Name) and aliases.get(t.id) != which:
                            aliases[t.id] = which
                            changed = True
        for node in ast.walk(self.tree):
            which = self.table(node, aliases)
            if which and not self.table_read(node, which, aliases):
                hook(node, which)
            for t in self.flatten(self.targets(node)):
                if self.replaces_import(t):
                    hook(t, "__import__")
                elif isinstance(t, ast.Attribute) and t.attr in IMPORT_METHODS:
                    hook(t, t.attr)
                elif isinstance(t, ast.Attribute) and self.import_module(t):
                    hook(t, self.imported(t))
            if isinstance(node, ast.ClassDef):
                for b in node.bases:
                    d = self.imported(b)
                    if d and d.split(".")[0] in IMPORT_MODULES and d.endswith(("Finder", "Loader", "Importer")):
                        hook(node, "a subclass of %s" % d)
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            key = const_str(node.args[1]) if len(node.args) >= 2 else None
            if name == "setattr" and key is not None:
                if key in IMPORT_TABLES:
                    hook(node, "sys." + key)
                elif key == "__import__" or key in IMPORT_METHODS:
                    hook(node, key)
                elif self.import_module(node.args[0]):
                    hook(node, self.imported(node.args[0]) + "." + key)
            elif name in ("__setitem__", "setdefault") and node.args and const_str(node.args[0]) == "__import__":
                hook(node, "__import__")
            elif name == "update" and (any(k.arg == "__import__" for k in node.keywords) or any(
                    isinstance(a, ast.Dict) and any(k is not None and const_str(k) == "__import__" for k in a.keys)
                    for a in node.args)):
                hook(node, "__import__")
            elif name == "path_hook":
                hook(node, "FileFinder.path_hook")

    def replaces_import(self, target):
        """Whether an assignment target is __import__ in a namespace: builtins.__import__,
        __builtins__["__import__"] and the like."""
        return isinstance(target, ast.Attribute) and target.attr == "__import__" or \
            isinstance(target, ast.Subscript) and const_str(target.slice) == "__import__"

    def import_module(self, node):
        """Whether an expression is (an attribute of) a module of the import system."""
        d = self.imported(node)
        return d is not None and d.split(".")[0] in IMPORT_MODULES

    def table(self, node, aliases):
        """Which of the import system's tables an expression is, or None."""
        if isinstance(node, ast.Attribute) and node.attr in IMPORT_TABLES:
            return "sys." + node.attr
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in aliases:
            return aliases[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
            key = const_str(node.args[1])
            if key in IMPORT_TABLES:
                return "sys." + key
        if isinstance(node, ast.Subscript) and const_str(node.slice) in IMPORT_TABLES and (
                isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__" or self.namespace(node.value)):
            return "sys." + const_str(node.slice)
        return None

    def table_read(self, node, which, aliases):
        """Whether a use of an import table only reads it. What is not known to read it
        (a method that changes it, an assignment, a hand-off to other code) counts as a
        change. Emptying the finders' cache is a read: it only has Python ask the hooks
        again, which is what importlib.invalidate_caches() does."""
        ctx = getattr(node, "ctx", ast.Load())
        if not isinstance(ctx, ast.Load):
            return False
        p = self.parent.get(node)
        removes = which == "sys.path_importer_cache"
        if isinstance(p, ast.Attribute) and p.value is node:
            return p.attr in TABLE_READS or removes and p.attr in ("clear", "pop", "popitem", "__delitem__")
        if isinstance(p, ast.Subscript) and p.value is node:
            return isinstance(p.ctx, ast.Load) or removes and isinstance(p.ctx, ast.Del)
        if isinstance(p, (ast.For, ast.AsyncFor, ast.comprehension)) and p.iter is node:
            return True
        # Not an and, an or or a conditional expression: their value may be the table.
        if isinstance(p, (ast.Compare, ast.Expr, ast.If, ast.While, ast.UnaryOp)):
            return True
        if isinstance(p, ast.Call) and node in p.args and isinstance(p.func, ast.Name) and p.func.id in TABLE_READERS:
            return True
        if isinstance(p, (ast.Assign, ast.NamedExpr)) and p.value is node:
            # Bound to a name: its uses are read in turn.
            targets = p.targets if isinstance(p, ast.Assign) else [p.target]
            return all(isinstance(t, ast.Name) and aliases.get(t.id) == which for t in targets)
        return False

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
