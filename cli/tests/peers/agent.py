"""A tiny scripted coding agent: before it runs a shell command it invokes a
PreToolUse hook exactly as its client's hook runner does — the event as JSON
on stdin, stdin closed, a timeout — reads the answer by that client's rules,
runs the command only when they let it, and then invokes the PostToolUse
hook with what the command did.

    agent.py --client claude-code|codex --timeout SECONDS [--on-failure block]
             [--kill-after SECONDS] --cwd DIR --session ID -- COMMAND -- HOOK...

Prints one JSON line: {"ran": bool, "why": str, "command": str}.

The clients' rules, as their hooks references give them:
- Claude Code reads the hook's JSON only on exit 0 (permissionDecision allow,
  deny, ask; updatedInput); exit 2 blocks with stderr as the reason; a crash,
  a timeout or another exit code lets the call run unless the hook is
  configured with onFailure "block".
- Codex blocks on exit 2 with a non-empty stderr, or on a deny with a
  non-empty reason; anything else — allow, ask, a timeout, a crash — lets the
  call run.
"""

import json
import subprocess
import sys
import uuid


def parse(argv):
    options = {"on_failure": None, "kill_after": None}
    i = 0
    while argv[i] != "--":
        key = argv[i].lstrip("-").replace("-", "_")
        options[key] = argv[i + 1]
        i += 2
    rest = argv[i + 1:]
    split = rest.index("--")
    return options, rest[0], rest[split + 1:]


def event(options, name, command, extra):
    body = {
        "session_id": options["session"],
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": options["cwd"],
        "hook_event_name": name,
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "a scripted step", "timeout": 120000},
        "tool_use_id": "toolu_" + uuid.uuid4().hex[:16],
        "a_field_from_a_later_version": {"nested": [1, 2, 3]},
    }
    if options["client"] == "codex":
        body["turn_id"] = "turn-1"
        body["model"] = "gpt-5"
        body["tool_input"] = {"command": command}
    body.update(extra)
    return body


def run_hook(options, hook, body):
    """The hook's exit code (None when it timed out or was killed), stdout, stderr."""
    process = subprocess.Popen(
        hook, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    timeout = float(options["timeout"])
    if options["kill_after"] is not None:
        try:
            out, err = process.communicate(json.dumps(body).encode(), timeout=float(options["kill_after"]))
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            return None, out.decode(), err.decode()
        return process.returncode, out.decode(), err.decode()
    try:
        out, err = process.communicate(json.dumps(body).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        return None, out.decode(), err.decode()
    code = process.returncode
    return (code if code >= 0 else None), out.decode(), err.decode()


def claude_code(options, code, out, err):
    """(run, why, updated input)"""
    if code is None or code not in (0, 2):
        if options["on_failure"] == "block":
            return False, "the hook failed and onFailure is block", None
        return True, "the hook failed; the call runs", None
    if code == 2:
        return False, err.strip(), None
    if not out.strip():
        return True, "no decision: the client's own rules apply", None
    try:
        answer = json.loads(out)["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return True, "unreadable output: the call runs", None
    decision = answer.get("permissionDecision")
    if decision == "deny":
        return False, answer.get("permissionDecisionReason", ""), None
    if decision == "ask":
        return False, "ask: nobody at this terminal", None
    if decision == "allow":
        return True, answer.get("permissionDecisionReason", ""), answer.get("updatedInput")
    return True, "no decision", None


def codex(options, code, out, err):
    if code == 2 and err.strip():
        return False, err.strip(), None
    if code == 0 and out.strip():
        try:
            answer = json.loads(out).get("hookSpecificOutput", {})
        except ValueError:
            return True, "unreadable output: the call runs", None
        if answer.get("permissionDecision") == "deny" and answer.get("permissionDecisionReason", "").strip():
            return False, answer["permissionDecisionReason"], None
    return True, "the call runs", None


def main():
    options, command, hook = parse(sys.argv[1:])
    body = event(options, "PreToolUse", command, {})
    code, out, err = run_hook(options, hook, body)
    read = claude_code if options["client"] == "claude-code" else codex
    run, why, updated = read(options, code, out, err)
    if run and updated is not None:
        command = updated.get("command", command)
    if run:
        done = subprocess.run(["sh", "-c", command], cwd=options["cwd"], capture_output=True)
        response = {"stdout": done.stdout.decode(), "stderr": done.stderr.decode(), "exit_code": done.returncode}
        after = event(options, "PostToolUse", command, {"tool_response": response})
        after["tool_use_id"] = body["tool_use_id"]
        run_hook({**options, "kill_after": None}, hook, after)
    print(json.dumps({"ran": run, "why": why, "command": command}))


main()
