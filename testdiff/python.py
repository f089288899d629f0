# The tests of Python files, read with Python's own ast for testdiff (SPEC §7.2):
# testdiff/python.go runs this script and compares what it writes. It never imports or
# runs the files it reads.
#
# Input (stdin): a JSON list of sources (strings, or null for a file that is not there).
# Output (stdout): a JSON list, one entry a source: null when it is not there or does not
# parse (a syntax error is the runner's to report), else {"tests": [...], "helpers":
# [...], "skips": {scope: count}, "imports": [module, ...], "aliases": {name: imported},
# "bases": {class: [base class names]}}. A test or helper is {"name",
# "line", "scope", "node", "body", "implicit"}; a node is the tree of testdiff/tree.go: "t" text, "h" head, "d"
# what a person reads, "k" kids, "s" sequences ({"rows", "i"}), "l" loop, "x" early exit,
# "n" skip markers, "b" binds, "w" writes, "r" names mentioned, "o" those mentioned only as
# a module's members, with the module.

import ast
import json
import sys

# Names that mark or make a skip: pytest's marks and calls, unittest's decorators and
# exception.
SKIP_NAMES = {"skip", "skipif", "xfail", "importorskip", "skipTest", "skipIf", "skipUnless",
              "expectedFailure", "SkipTest", "Skipped"}

# Methods and functions the runners call around every test of their class or module.
IMPLICIT = {"setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp", "asyncTearDown",
            "setup_method", "teardown_method", "setup_class", "teardown_class", "setup_module",
            "teardown_module", "setup_function", "teardown_function", "setup", "teardown",
            "setUpModule", "tearDownModule"}

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)


def dumpv(v):
    if isinstance(v, ast.AST):
        return ast.dump(v)
    if isinstance(v, list):
        return "[" + ",".join(dumpv(x) for x in v) + "]"
    return repr(v)


def head_of(n, skip):
    parts = [type(n).__name__]
    for f in n._fields:
        if f == "type_comment":
            continue
        parts.append(f + "=" + ("_" if f in skip else dumpv(getattr(n, f, None))))
    return " ".join(parts)


def show(n):
    try:
        s = ast.unparse(n)
    except Exception:
        return ""
    return s.split("\n")[0]


def leaf(n):
    t = ast.dump(n)
    return {"t": t, "h": t, "d": show(n), **names_of(n), "c": checks_of(n), "v": via_of(n)}


CHECK_CALLS = {"fail", "raises", "warns", "deprecated_call"}


SWALLOWS = {"AssertionError", "Exception", "BaseException"}


def swallows(handler):
    """Whether an except clause catches a failed assertion."""
    t = handler.type
    if t is None:
        return True
    names = t.elts if isinstance(t, ast.Tuple) else [t]
    return any(isinstance(x, ast.Name) and x.id in SWALLOWS or isinstance(x, ast.Attribute) and x.attr in SWALLOWS for x in names)


def via_of(n):
    """The functions a node calls by a plain name, or as self.name: each is a check when
    that helper of the file checks."""
    out = []
    for x in ast.walk(n):
        if isinstance(x, ast.Call):
            f = x.func
            if isinstance(f, ast.Name):
                out.append(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
                out.append(f.attr)
    return out


def checks_of(n):
    """The checks in a node: assert statements, and the calls that check or report a
    failure (self.assertEqual, mock.assert_called_once, pytest.raises, pytest.fail); none
    in the body of a try whose except catches a failed assertion."""
    count = 0
    stack = [n]
    while stack:
        x = stack.pop()
        if isinstance(x, ast.Try) and any(swallows(h) for h in x.handlers):
            stack.extend(x.handlers)
            stack.extend(x.orelse)
            stack.extend(x.finalbody)
            continue
        if isinstance(x, ast.Assert):
            count += 1
        elif isinstance(x, ast.Call):
            name, _ = callee(x)
            if name.startswith("assert") or name in CHECK_CALLS:
                count += 1
        stack.extend(ast.iter_child_nodes(x))
    return count


def callee(call):
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr, f.value
    if isinstance(f, ast.Name):
        return f.id, None
    return "", None


def exit_of(root):
    """How a statement, added to a test, leaves it early or skips it ("" if it does not)."""
    found = []

    def walk(n, fn, loop):
        if found:
            return
        if n is not root and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            fn, loop = True, False
        elif n is not root and isinstance(n, (ast.For, ast.AsyncFor, ast.While)):
            loop = True
        if isinstance(n, ast.Return) and not fn:
            found.append("an early return")
        elif isinstance(n, ast.Break) and not loop:
            found.append("a break")
        elif isinstance(n, ast.Continue) and not loop:
            found.append("a continue")
        elif isinstance(n, ast.Raise) and n.exc is not None:
            names = {x.id for x in ast.walk(n.exc) if isinstance(x, ast.Name)}
            names |= {x.attr for x in ast.walk(n.exc) if isinstance(x, ast.Attribute)}
            if names & {"SkipTest", "Skipped"} or {"skip", "Exception"} <= names:
                found.append("a raised skip (" + show(n) + ")")
        elif isinstance(n, ast.Call):
            name, base = callee(n)
            if name in ("skip", "xfail", "importorskip", "skipTest"):
                found.append(show(n.func))
            elif name == "exit" and (base is None or isinstance(base, ast.Name) and base.id in ("sys", "pytest", "os")):
                found.append(show(n.func))
            elif name in ("_exit", "quit", "abort"):
                found.append(show(n.func))
        for c in ast.iter_child_nodes(n):
            walk(c, fn, loop)

    walk(root, False, False)
    return found[0] if found else ""


def skips_of(n):
    count = 0
    for x in ast.walk(n):
        if isinstance(x, ast.Name) and x.id in SKIP_NAMES or isinstance(x, ast.Attribute) and x.attr in SKIP_NAMES:
            count += 1
    return count


def root_of(e):
    while True:
        if isinstance(e, ast.Name):
            return e.id
        if isinstance(e, (ast.Attribute, ast.Subscript, ast.Starred)):
            e = e.value
        else:
            return ""


def binds_writes(stmt):
    """The names a statement binds in its function, and the roots of what it writes that
    it does not bind: attributes and items of outer values, globals, patched names."""
    binds, writes = [], []

    def walk(n, top):
        if not top and isinstance(n, SCOPES):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.append(n.name)
            # What an inner scope writes to outer values is still written.
            for x in ast.walk(n):
                if isinstance(x, (ast.Attribute, ast.Subscript)) and isinstance(x.ctx, (ast.Store, ast.Del)):
                    writes.append(root_of(x))
                elif isinstance(x, (ast.Global, ast.Nonlocal)):
                    writes.extend(x.names)
            return
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            binds.append(n.id)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            writes.append(root_of(n))
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            writes.extend(n.names)
        elif isinstance(n, ast.alias):
            binds.append((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            binds.append(n.name)
        elif isinstance(n, ast.Call):
            name, base = callee(n)
            if name == "setattr" and n.args:
                writes.append(root_of(n.args[0]) or "setattr")
            elif name in ("patch", "object", "dict", "multiple") and (name == "patch" or isinstance(base, ast.Attribute) and base.attr == "patch"):
                writes.append("patch")
            elif name in ("setitem", "delattr", "delitem", "syspath_prepend", "chdir"):
                writes.append(name)
        for c in ast.iter_child_nodes(n):
            walk(c, False)

    walk(stmt, True)
    bound = set(binds)
    return sorted(set(binds)), sorted({w for w in writes if w and w not in bound})


# The modules the file being read imports, by the name it gives them (import calc as c:
# "c" is "calc"), and the names it imports from modules (from calc import mul: "mul" is
# "calc.mul"). read sets them for each file.
MODULES = {}
MEMBERS = {}
# The names the function being read binds itself (locals_of); unit sets them.
LOCALS = set()
# The classes the file being read defines, and those its function defines; read and unit
# set them.
DEFINED = set()


def names_of(n):
    """What a node mentions: as "r" every name, with the strings that are names
    (getattr(calc, "mul"), a table's "mul" row: a test reaches a function by either), and
    as "o" the names it mentions only as members of a module it imports, with the module:
    "operator.mul" for operator.mul, or for mul after "from operator import mul"."""
    out = set()
    alone = set()
    owned = set()
    # A test's id (pytest.param(..., id="mul"), ids=[...]) names a case, not a function.
    # Nor does a message: an assert's, a msg= argument's, an f-string's parts.
    labels = {id(k.value) for k in ast.walk(n) if isinstance(k, ast.keyword) and k.arg in ("id", "ids", "msg")}
    labels |= {id(e) for k in ast.walk(n) if isinstance(k, ast.keyword) and k.arg == "ids"
               and isinstance(k.value, (ast.List, ast.Tuple)) for e in k.value.elts}
    labels |= {id(x) for a in ast.walk(n) if isinstance(a, ast.Assert) and a.msg is not None for x in ast.walk(a.msg)}
    labels |= {id(x) for j in ast.walk(n) if isinstance(j, ast.JoinedStr) for x in ast.walk(j)}
    for x in ast.walk(n):
        if isinstance(x, ast.Name):
            out.add(x.id)
            if x.id in LOCALS:
                owned.add("(local)." + x.id)  # never what is missing
            elif x.id in MEMBERS:
                owned.add(MEMBERS[x.id])
            else:
                alone.add(x.id)
        elif isinstance(x, ast.Attribute):
            out.add(x.attr)
            if isinstance(x.value, ast.Name) and x.value.id in MODULES and x.value.id not in LOCALS:
                owned.add(MODULES[x.value.id] + "." + x.attr)
            elif isinstance(x.value, ast.Name) and x.value.id in DEFINED:
                owned.add("(local)." + x.attr)  # a member of a class the test file defines
            else:
                owned.add("." + x.attr)  # a value's member
        elif isinstance(x, ast.arg):
            out.add(x.arg)
            owned.add("(local)." + x.arg)
        elif isinstance(x, ast.Constant) and isinstance(x.value, str) and x.value.isidentifier() and id(x) not in labels:
            out.add(x.value)
            alone.add(x.value)
    return {"r": sorted(out), "o": sorted(q for q in owned if q.rsplit(".", 1)[-1] not in alone)}


def imports_of(tree):
    """What a module's imports (anywhere in it: an import inside a test binds there) bind
    and name, in one walk:
    - modules: the names that are modules (import calc as c: c is calc), for MODULES;
    - members: the names imported from a module (from calc import mul: calc.mul), for
      MEMBERS; a relative import's are marked with their level ("^1:fakes.mul"), for
      testdiff to read from the file's folder;
    - imported: the modules they name, sorted: import a.b gives a.b; from a.b import c
      gives a.b and a.b.c (c may be a module); a relative one keeps its dots;
    - aliases: the names given to what is imported under another name (from
      tests.helpers import check as verify: verify is check)."""
    modules, members, imported, aliases = {}, {}, set(), {}
    for s in ast.walk(tree):
        if isinstance(s, ast.Import):
            for a in s.names:
                imported.add(a.name)
                if a.asname:
                    modules[a.asname] = a.name
                else:
                    first = a.name.split(".")[0]
                    modules[first] = first
        elif isinstance(s, ast.ImportFrom):
            mod = "." * (s.level or 0) + (s.module or "")
            if s.module:
                imported.add(mod)
            for a in s.names:
                if a.name == "*":
                    continue
                imported.add((mod + "." if s.module else mod) + a.name)
                if a.asname and a.asname != a.name:
                    aliases[a.asname] = a.name
                if s.level:
                    members[a.asname or a.name] = "^%d:%s%s" % (s.level, (s.module + ".") if s.module else "", a.name)
                elif s.module:
                    members[a.asname or a.name] = s.module + "." + a.name
    return modules, members, sorted(imported), aliases


def reads_of(s):
    """What an assignment reads: its value, and the targets that are not plain names; a
    name mentioned only as a module's member, with the module (names_of)."""
    out = set(judged(s.value))
    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
    for t in targets:
        if not isinstance(t, ast.Name):
            out.update(judged(t))
    return sorted(out)


def judged(n):
    """The names a node mentions as testdiff judges them against what is missing: alone,
    or with their module where names_of owns them (tree.go's ownedNames)."""
    names = names_of(n)
    out = []
    for r in names["r"]:
        qs = [q for q in names["o"] if q.endswith("." + r)]
        out.extend(qs or [r])
    return out


def ranged_names(fn):
    names = set()
    for x in ast.walk(fn):
        it = None
        if isinstance(x, (ast.For, ast.AsyncFor, ast.comprehension)):
            it = x.iter
        if it is None:
            continue
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute):
            it = it.func.value  # cases.items()
        if isinstance(it, ast.Call) and it.args:
            it = it.args[0]  # enumerate(cases), zip(...)
        if isinstance(it, ast.Name):
            names.add(it.id)
    return names


class Builder:
    def __init__(self, ranged):
        self.ranged = ranged

    def stmts(self, body):
        return {"i": [self.stmt(s) for s in body]}

    def stmt(self, s):
        t = ast.dump(s)
        n = {"t": t, "d": show(s)}
        if isinstance(s, ast.If):
            n["h"] = head_of(s, {"body", "orelse"})
            n["s"] = [self.stmts(s.body), self.stmts(s.orelse)]
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            n["h"] = head_of(s, {"iter", "body", "orelse"})
            n["k"] = [self.expr(s.iter, True)]
            n["s"] = [self.stmts(s.body), self.stmts(s.orelse)]
            n["l"] = True
        elif isinstance(s, ast.While):
            n["h"] = head_of(s, {"body", "orelse"})
            n["s"] = [self.stmts(s.body), self.stmts(s.orelse)]
            n["l"] = True
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            n["h"] = head_of(s, {"body"})
            n["s"] = [self.stmts(s.body)]
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            n["h"] = head_of(s, {"body", "orelse", "finalbody"})
            n["s"] = [self.stmts(s.body), self.stmts(s.orelse), self.stmts(s.finalbody)]
        elif isinstance(s, ast.Expr):
            n["h"] = "Expr"
            n["k"] = [self.expr(s.value, False)]
        elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            # A table: ranged over here, or one whose value reads as one (a helper's).
            rows = any(isinstance(x, ast.Name) and x.id in self.ranged for x in targets) or is_table(s.value)
            n["h"] = head_of(s, {"value"})
            n["k"] = [self.expr(s.value, rows)]
            n["as"], n["rd"] = True, reads_of(s)
        else:
            n["h"] = t
        x = exit_of(s)
        if x:
            n["x"] = x
        n["n"] = skips_of(s)
        n["b"], n["w"] = binds_writes(s)
        n.update(names_of(s))
        n["c"] = checks_of(s)
        n["v"] = via_of(s)
        return n

    def expr(self, e, rows):
        if isinstance(e, ast.Call):
            name, _ = callee(e)
            n = {"t": ast.dump(e), "d": show(e),
                 "h": head_of(e, {"args", "keywords"}) + " %d %s" % (len(e.args), [k.arg for k in e.keywords]),
                 **names_of(e), "c": checks_of(e), "v": via_of(e)}
            kids = []
            for i, a in enumerate(e.args):
                # A table given to a call (check_all([(1, 2, 3), ...])) is rows.
                kids.append(self.expr(a, name == "parametrize" and i == 1 or is_table(a)))
            for k in e.keywords:
                kids.append(self.expr(k.value, name == "parametrize" and k.arg == "argvalues"))
            n["k"] = kids
            return n
        if rows and isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return {"t": ast.dump(e), "d": show(e), "h": type(e).__name__, **names_of(e),
                    "s": [{"rows": True, "i": [leaf(x) for x in e.elts]}]}
        if rows and isinstance(e, ast.Dict):
            items = []
            for k, v in zip(e.keys, e.values):
                t = (ast.dump(k) if k is not None else "**") + ": " + ast.dump(v)
                row = ast.Tuple(elts=[v] if k is None else [k, v], ctx=ast.Load())
                items.append({"t": t, "h": t, "d": (show(k) if k is not None else "**") + ": " + show(v),
                              **names_of(row)})
            return {"t": ast.dump(e), "d": show(e), "h": "Dict", **names_of(e), "s": [{"rows": True, "i": items}]}
        return leaf(e)

    def function(self, fn):
        n = {"t": ast.dump(fn), "d": "def " + fn.name,
             "h": head_of(fn, {"decorator_list", "body"}),
             "k": [self.expr(d, False) for d in fn.decorator_list],
             "s": [self.stmts(fn.body)],
             "n": skips_of(fn), **names_of(fn), "c": checks_of(fn), "v": via_of(fn)}
        return n


def body_key(fn):
    named = ast.FunctionDef if isinstance(fn, ast.FunctionDef) else ast.AsyncFunctionDef
    copy = named(name="_", args=fn.args, body=fn.body, decorator_list=fn.decorator_list,
                 returns=fn.returns, type_params=getattr(fn, "type_params", []))
    return ast.dump(copy)


def autouse(fn):
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and any(k.arg == "autouse" and isinstance(k.value, ast.Constant) and k.value.value for k in d.keywords):
            return True
    return False


def is_table(e):
    """Whether an expression is a literal table: a list or tuple of rows, each a tuple, a
    list or a dict, or each a call of the same function (Case(1, 2, 3), a namedtuple's or
    a dataclass's)."""
    if not isinstance(e, (ast.List, ast.Tuple)) or not e.elts:
        return False
    if all(isinstance(x, (ast.Tuple, ast.List, ast.Dict)) for x in e.elts):
        return True
    callees = {ast.dump(x.func) for x in e.elts if isinstance(x, ast.Call)}
    return len(callees) == 1 and all(isinstance(x, ast.Call) for x in e.elts)


def unit(fn, scope, name):
    b = Builder(ranged_names(fn))
    LOCALS.clear()
    LOCALS.update(locals_of(fn))
    defined = set(DEFINED)
    DEFINED.update(x.name for x in ast.walk(fn) if isinstance(x, ast.ClassDef))
    try:
        return {"name": name, "line": fn.lineno, "scope": scope, "node": b.function(fn), "body": body_key(fn)}
    finally:
        LOCALS.clear()
        DEFINED.clear()
        DEFINED.update(defined)


def locals_of(fn):
    """The names a function binds itself: its parameters, what it assigns, the functions
    and classes it defines (its nested functions' too): never a module's."""
    out = set()
    for x in ast.walk(fn):
        if isinstance(x, ast.arg):
            out.add(x.arg)
        elif isinstance(x, ast.Name) and isinstance(x.ctx, (ast.Store, ast.Del)):
            out.add(x.id)
        elif isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and x is not fn:
            out.add(x.name)
    return out


def read(src):
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return None
    out = {"tests": [], "helpers": [], "skips": {}, "bases": {}}
    modules, members, imported, aliases = imports_of(tree)
    MODULES.clear()
    MODULES.update(modules)
    MEMBERS.clear()
    MEMBERS.update(members)
    DEFINED.clear()
    DEFINED.update(x.name for x in tree.body if isinstance(x, ast.ClassDef) and not x.name.startswith("Test"))

    def other(s, scope, prefix):
        # A statement of a module or class body that is not a function: a table (by the
        # names it assigns) and skip markers (a pytestmark, a module-level skip call).
        skips = skips_of(s)
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            names = [x.id for x in targets if isinstance(x, ast.Name)]
            if "pytestmark" not in names:
                skips = 0
            b = Builder(set(names))
            node = b.stmt(s)
            node.update(names_of(s))
            for name in names:
                out["helpers"].append({"name": name, "line": s.lineno, "scope": scope, "node": node, "body": node["t"]})
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            skips = 0
        out["skips"][scope] = out["skips"].get(scope, 0) + skips

    def visit(body, scope, prefix):
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if s.name.startswith("test"):
                    out["tests"].append(unit(s, scope, prefix + s.name))
                else:
                    h = unit(s, scope, s.name)
                    h["implicit"] = s.name in IMPLICIT or autouse(s)
                    out["helpers"].append(h)
            elif isinstance(s, ast.ClassDef):
                inner = prefix + s.name
                out["skips"][inner] = out["skips"].get(inner, 0) + sum(skips_of(d) for d in s.decorator_list)
                bases = [b.id if isinstance(b, ast.Name) else b.attr for b in s.bases
                         if isinstance(b, (ast.Name, ast.Attribute))]
                if bases:
                    out["bases"][inner] = bases
                visit(s.body, inner, inner + ".")
            else:
                other(s, scope, prefix)

    visit(tree.body, "", "")
    out["imports"] = imported
    out["aliases"] = aliases
    return out


def main():
    sources = json.load(sys.stdin)
    json.dump([None if s is None else read(s) for s in sources], sys.stdout)


main()
