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
// Exit codes of the launcher itself, those of acp-guard for a program it
// cannot start (README.md, the exit code table): 127 when no binary is
// installed for this platform (it says which package is missing and how
// to install it), 126 when the binary is there but cannot be executed.
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

// binaryPath finds this platform's binary or ends the launcher, saying why.
function binaryPath() {
  const wanted = `acp-guard-${process.platform}-${process.arch}`;
  const exe = process.platform === 'win32' ? 'acp-guard.exe' : 'acp-guard';
  const supported = Object.keys(manifest.optionalDependencies || {});
  const fromSource = `go install github.com/acp-guard/acp-guard/cmd/acp-guard@v${manifest.version}`;
  if (!supported.includes(wanted)) {
    say([
      `there is no acp-guard binary for ${process.platform}/${process.arch}; packages exist for ` +
        supported.map((p) => p.replace(/^acp-guard-/, '').replace('-', '/')).join(', ') + '.',
      `Build it from source instead (Go 1.26): ${fromSource}`,
    ]);
    process.exit(EXIT_NOT_FOUND);
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${wanted}/package.json`));
  } catch (err) {
    say([
      `the package ${wanted}@${manifest.version}, which holds the acp-guard binary for ` +
        `${process.platform}/${process.arch}, is not installed.`,
      'npm installs it with acp-guard as an optional dependency; it is left out by ' +
        '--omit=optional (--no-optional), by a lockfile made on another platform, or by an install that could not fetch it.',
      `Install it beside acp-guard: npm install ${wanted}@${manifest.version}`,
    ]);
    process.exit(EXIT_NOT_FOUND);
  }
  const own = require(path.join(dir, 'package.json')).version;
  if (own !== manifest.version) {
    say([`warning: ${wanted} is version ${own}, acp-guard ${manifest.version}; ` +
      `npm install ${wanted}@${manifest.version} matches them.`]);
  }
  const bin = path.join(dir, 'bin', exe);
  if (!fs.existsSync(bin)) {
    say([`${wanted} is installed in ${dir} but holds no bin/${exe}; reinstall it: npm install ${wanted}@${manifest.version}`]);
    process.exit(EXIT_NOT_FOUND);
  }
  return bin;
}

const bin = binaryPath();

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
  say([`cannot run ${bin}: ${err.message}`]);
  process.exit(err.code === 'ENOENT' ? EXIT_NOT_FOUND : EXIT_NOT_EXEC);
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
