// The python3 kernel of the notebook tools: a small REPL driver of our own (there is no ipykernel
// here) speaking JSON lines. Requests on stdin: { id, op: "exec", code } runs a cell in one
// persistent namespace (the value of a last expression is its result, as in Jupyter);
// { id, op: "vars", filter } lists the namespace. Each answer is one line on the original stdout,
// with the cell's outputs in nbformat 4 shape; the cell's own stdout and stderr are captured, fd 1
// is pointed at stderr so stray writes cannot break the protocol, and stdin reads as empty.
export const DRIVER = String.raw`
import ast, contextlib, io, json, os, re, sys, traceback, types
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
requests = sys.stdin
sys.stdin = io.StringIO("")
ns = {"__name__": "__main__"}
count = 0

def answer(message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()

def run(code):
    global count
    count += 1
    out, err = io.StringIO(), io.StringIO()
    result, error = None, None
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(tree, "<cell>", "exec"), ns)
            if last is not None:
                value = eval(compile(last, "<cell>", "eval"), ns)
                if value is not None:
                    ns["_"] = value
                    result = repr(value)
    except BaseException as e:
        error = {"output_type": "error", "ename": type(e).__name__, "evalue": str(e),
                 "traceback": traceback.format_exception(type(e), e, e.__traceback__)}
    outputs = []
    for name, buffer in (("stdout", out), ("stderr", err)):
        if buffer.getvalue():
            outputs.append({"output_type": "stream", "name": name, "text": buffer.getvalue()})
    if result is not None:
        outputs.append({"output_type": "execute_result", "execution_count": count, "data": {"text/plain": result}, "metadata": {}})
    if error is not None:
        outputs.append(error)
    return {"count": count, "outputs": outputs}

def variables(pattern):
    found = {}
    for name, value in ns.items():
        if name.startswith("_") or isinstance(value, types.ModuleType) or not re.search(pattern, name):
            continue
        text = repr(value)
        found[name] = {"type": type(value).__name__, "value": text if len(text) <= 200 else text[:200] + "..."}
    return found

for line in requests:
    message = json.loads(line)
    if message["op"] == "exec":
        answer({"id": message["id"], **run(message["code"])})
    elif message["op"] == "vars":
        try:
            answer({"id": message["id"], "vars": variables(message.get("filter") or "")})
        except re.error as e:
            answer({"id": message["id"], "error": "filter is not a valid regular expression: " + str(e)})
`;
