#!/usr/bin/env node
// acp-guard's npm launcher (npm/README.md). It runs the native acp-guard
// binary that npm installed beside it as one of this package's
// optionalDependencies, acp-guard-<platform>-<arch>, each of which declares
// the os and cpu it is for, so npm installs only the one that fits.
//
// The binary inherits stdin, stdout and stderr themselves: not one byte of
// the session passes through JavaScript. SIGINT, SIGTERM and SIGHUP sent
// to the launcher are passed on to acp-guard (which forwards them once to
// the agent), and the launcher ends as acp-guard did: with its exit code,
// or killed by the same signal.
//
// When it cannot run the binary it says why on stderr and in an answer to
// the client's first request, and exits as acp-guard does for a program it
// cannot start (README.md, the exit code table): 127 when no binary is
// installed for this platform (naming the missing package and how to
// install it), 126 when the binary is there but cannot be executed.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const manifest = require('../package.json');

const EXIT_NOT_FOUND = 127;
const EXIT_NOT_EXEC = 126;

function say(lines) {
  process.stderr.write(lines.map((l) => `acp-guard (npm): ${l}\n`).join(''));
}

// fail ends the launcher with code, saying why: on stderr and, since an
// editor shows only what comes on stdout, as a JSON-RPC error answering the
// client's first request (as acp-guard answers a configuration mistake or
// a missing agent: docs/WIRE.md) if one comes within startupWindow.
const startupWindow = 2000;
function fail(code, lines) {
  say(lines);
  if (process.stdin.isTTY) {
    process.exit(code);
  }
  setTimeout(() => process.exit(code), startupWindow);
  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buf += chunk;
    for (let i; (i = buf.indexOf('\n')) >= 0; ) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let m;
      try {
        m = JSON.parse(line);
      } catch (err) {
        continue;
      }
      const id = m && typeof m.method === 'string' ? m.id : undefined;
      if (id === undefined || id === null) {
        continue; // a notification, or not a request
      }
      if (typeof id === 'number' && !Number.isSafeInteger(id)) {
        process.exit(code); // an id JavaScript cannot write back as it came
      }
      const answer = { jsonrpc: '2.0', id, error: { code: -32603, message: `acp-guard: ${lines.join(' ')}` } };
      process.stdout.write(JSON.stringify(answer) + '\n', () => process.exit(code));
      process.stdin.pause();
      return;
    }
    if (buf.length > 1 << 20) {
      buf = ''; // no request in the first MiB of a line
    }
  });
  process.stdin.on('end', () => process.exit(code));
}

// binaryPath finds this platform's binary: its path, or why there is none.
function binaryPath() {
  const wanted = `acp-guard-${process.platform}-${process.arch}`;
  const exe = process.platform === 'win32' ? 'acp-guard.exe' : 'acp-guard';
  const supported = Object.keys(manifest.optionalDependencies || {});
  const fromSource = `go install github.com/acp-guard/acp-guard/cmd/acp-guard@v${manifest.version}`;
  if (!supported.includes(wanted)) {
    return {
      missing: [
        `there is no acp-guard binary for ${process.platform}/${process.arch}; packages exist for ` +
          supported.map((p) => p.replace(/^acp-guard-/, '').replace('-', '/')).join(', ') + '.',
        `Build it from source instead (Go 1.26): ${fromSource}`,
      ],
    };
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${wanted}/package.json`));
  } catch (err) {
    return {
      missing: [
        `the package ${wanted}@${manifest.version}, which holds the acp-guard binary for ` +
          `${process.platform}/${process.arch}, is not installed.`,
        'npm installs it with acp-guard as an optional dependency; it is left out by ' +
          '--omit=optional (--no-optional), by a lockfile made on another platform, or by an install that could not fetch it.',
        `Install it beside acp-guard: npm install ${wanted}@${manifest.version}`,
      ],
    };
  }
  const own = require(path.join(dir, 'package.json')).version;
  if (own !== manifest.version) {
    say([`warning: ${wanted} is version ${own}, acp-guard ${manifest.version}; ` +
      `npm install ${wanted}@${manifest.version} matches them.`]);
  }
  const bin = path.join(dir, 'bin', exe);
  if (!fs.existsSync(bin)) {
    return { missing: [`${wanted} is installed in ${dir} but holds no bin/${exe}; reinstall it: npm install ${wanted}@${manifest.version}`] };
  }
  return { bin };
}

const found = binaryPath();
if (found.missing) {
  fail(EXIT_NOT_FOUND, found.missing);
} else {
  run(found.bin);
}

function run(bin) {

  // Forward the stop signals. On POSIX each goes to acp-guard once; a Ctrl-C
  // in a terminal reaches acp-guard directly as well, and acp-guard forwards
  // a signal to the agent only once. On Windows a console's Ctrl-C and
  // Ctrl-Break reach every process on the console, acp-guard included, and
  // child.kill would terminate it outright: there the launcher only stays
  // alive until acp-guard has stopped the agent and exited. The handlers are
  // in place before the child starts (they run on the event loop, after
  // this script, so child is set by then).
  let child;
  const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const handlers = new Map();
  for (const sig of forwarded) {
    const h = () => {
      if (process.platform !== 'win32') {
        child.kill(sig);
      }
    };
    handlers.set(sig, h);
    process.on(sig, h);
  }
  if (process.platform === 'win32') {
    process.on('SIGBREAK', () => {});
  }

  child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });

  child.on('error', (err) => {
    fail(err.code === 'ENOENT' ? EXIT_NOT_FOUND : EXIT_NOT_EXEC, [`cannot run ${bin}: ${err.message}`]);
  });

  child.on('exit', (code, signal) => {
    if (signal === null) {
      process.exit(code === null ? 1 : code);
    }
    // acp-guard was killed by a signal: end the same way, so that whoever
    // started the launcher sees what it would have seen without it.
    for (const [sig, h] of handlers) {
      process.removeListener(sig, h);
    }
    const n = os.constants.signals[signal] || 0;
    try {
      process.kill(process.pid, signal);
    } catch (err) {
      // a signal Node cannot raise: fall through to its exit code
    }
    setTimeout(() => process.exit(128 + n), 200);
  });
}
