#!/usr/bin/env node
// pack.mjs builds acp-guard's npm packages from built binaries and packs
// them with `npm pack` (npm/README.md):
//
//   acp-guard-VERSION.tgz                the launcher (npm/acp-guard), whose
//                                        optionalDependencies name the six
//                                        platform packages at exactly VERSION
//   acp-guard-<os>-<cpu>-VERSION.tgz     one per binary given: the binary in
//                                        bin/, with os and cpu set so npm
//                                        installs only the one that fits
//
// Usage:
//   node npm/pack.mjs --version V --out DIR --bin linux/amd64=bin/acp-guard …
//   node npm/pack.mjs --version V --out DIR --dist dist --all
//
// --bin GOOS/GOARCH=PATH names a binary; --dist DIR takes every binary
// GoReleaser listed in DIR/artifacts.json; --all fails unless all six
// platforms have one (a release). It prints one line per tarball: its
// path, size and SHA-256.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);

// The platforms, as Go names them and as Node does (process.platform,
// process.arch): the one list the packages are made from. The launcher
// reads it back from its own optionalDependencies.
const targets = [
  { goos: 'darwin', goarch: 'amd64', os: 'darwin', cpu: 'x64' },
  { goos: 'darwin', goarch: 'arm64', os: 'darwin', cpu: 'arm64' },
  { goos: 'linux', goarch: 'amd64', os: 'linux', cpu: 'x64' },
  { goos: 'linux', goarch: 'arm64', os: 'linux', cpu: 'arm64' },
  { goos: 'windows', goarch: 'amd64', os: 'win32', cpu: 'x64' },
  { goos: 'windows', goarch: 'arm64', os: 'win32', cpu: 'arm64' },
];
const pkgName = (t) => `acp-guard-${t.os}-${t.cpu}`;

function usage(msg) {
  console.error(`pack.mjs: ${msg}\nusage: node npm/pack.mjs --version V --out DIR (--bin GOOS/GOARCH=PATH … | --dist DIR) [--all]`);
  process.exit(2);
}

const opts = { bins: new Map(), all: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
  switch (a) {
    case '--version': opts.version = val(); break;
    case '--out': opts.out = val(); break;
    case '--dist': opts.dist = val(); break;
    case '--all': opts.all = true; break;
    case '--bin': {
      const m = /^([a-z0-9]+)\/([a-z0-9]+)=(.+)$/.exec(val());
      if (!m) usage('--bin takes GOOS/GOARCH=PATH');
      opts.bins.set(`${m[1]}/${m[2]}`, path.resolve(m[3]));
      break;
    }
    default: usage(`unknown argument ${a}`);
  }
}
if (!opts.version) usage('--version is required');
if (!opts.out) usage('--out is required');
// npm takes semver only (scripts/version.sh makes one).
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/.test(opts.version)) {
  usage(`version ${opts.version} is not a semver version npm accepts`);
}

if (opts.dist) {
  // GoReleaser's artifacts.json: paths relative to the directory it ran in.
  const list = JSON.parse(fs.readFileSync(path.join(opts.dist, 'artifacts.json'), 'utf8'));
  const base = path.dirname(path.resolve(opts.dist));
  for (const a of list) {
    if (a.type === 'Binary' && a.goos && a.goarch) {
      opts.bins.set(`${a.goos}/${a.goarch}`, path.resolve(base, a.path));
    }
  }
}
for (const key of opts.bins.keys()) {
  if (!targets.some((t) => `${t.goos}/${t.goarch}` === key)) usage(`no npm package for ${key}`);
}
if (opts.bins.size === 0) usage('no binaries given (--bin or --dist)');
if (opts.all && opts.bins.size !== targets.length) {
  usage(`--all: binaries for ${[...opts.bins.keys()].join(', ')} only; want all ${targets.length}`);
}

const out = path.resolve(opts.out);
const stage = path.join(out, 'stage');
fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });

const license = ['LICENSE', 'LICENSE.md', 'LICENSE.txt'].map((f) => path.join(root, f)).find((f) => fs.existsSync(f));
const launcher = JSON.parse(fs.readFileSync(path.join(here, 'acp-guard', 'package.json'), 'utf8'));
const common = { homepage: launcher.homepage, repository: launcher.repository };

function writeJSON(file, v) {
  fs.writeFileSync(file, JSON.stringify(v, null, 2) + '\n');
}

// pack runs npm pack in dir and returns the tarball's path.
function pack(dir) {
  const res = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
    cwd: dir,
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return path.join(out, JSON.parse(res)[0].filename);
}

const made = [];

// The platform packages.
for (const t of targets) {
  const src = opts.bins.get(`${t.goos}/${t.goarch}`);
  if (!src) continue;
  const dir = path.join(stage, pkgName(t));
  const exe = t.goos === 'windows' ? 'acp-guard.exe' : 'acp-guard';
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.copyFileSync(src, path.join(dir, 'bin', exe));
  fs.chmodSync(path.join(dir, 'bin', exe), 0o755);
  if (license) fs.copyFileSync(license, path.join(dir, path.basename(license)));
  fs.writeFileSync(path.join(dir, 'README.md'),
    `# ${pkgName(t)}\n\nThe acp-guard binary for ${t.os}/${t.cpu}. Install \`acp-guard\`, not this package:\n` +
    `npm installs this one with it on ${t.os}/${t.cpu}, and its launcher runs the binary.\n`);
  writeJSON(path.join(dir, 'package.json'), {
    name: pkgName(t),
    version: opts.version,
    description: `The acp-guard binary for ${t.os}/${t.cpu} (installed by the acp-guard package)`,
    ...common,
    os: [t.os],
    cpu: [t.cpu],
    files: ['bin'],
    preferUnplugged: true,
  });
  made.push(pack(dir));
}

// The launcher.
{
  const dir = path.join(stage, 'acp-guard');
  fs.cpSync(path.join(here, 'acp-guard'), dir, { recursive: true });
  fs.chmodSync(path.join(dir, 'bin', 'acp-guard.js'), 0o755);
  if (license) fs.copyFileSync(license, path.join(dir, path.basename(license)));
  const pkg = { ...launcher, version: opts.version, optionalDependencies: {} };
  for (const t of targets) pkg.optionalDependencies[pkgName(t)] = opts.version;
  writeJSON(path.join(dir, 'package.json'), pkg);
  made.push(pack(dir));
}

fs.rmSync(stage, { recursive: true, force: true });
for (const f of made) {
  const b = fs.readFileSync(f);
  console.log(`${path.relative(process.cwd(), f)}\t${b.length}\t${createHash('sha256').update(b).digest('hex')}`);
}
