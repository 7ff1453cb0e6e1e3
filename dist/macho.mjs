// Checks a macOS binary of tuls without a Mac: CI builds them here (dist/build.sh,
// cargo-zigbuild) but cannot run them, so this reads the Mach-O file itself.
//
//   node dist/macho.mjs FILE x86_64|arm64     # prints what it found; exits 1 on a problem
//   import { checkMachO } from "./macho.mjs"   # { problems: [...], info: {...} }
//
// A binary passes when it is a thin 64-bit Mach-O executable (MH_EXECUTE, PIE)
// for that CPU, started by /usr/lib/dyld through LC_MAIN, built for macOS with a
// deployment target of at most MIN_MACOS, linked against nothing but the system
// libraries in SYSTEM_DYLIBS (no @rpath, no Homebrew, no SDK-only library), and,
// for arm64, carries an ad-hoc code signature whose page hashes match the file
// (Apple silicon refuses to run an unsigned arm64 binary or one changed after
// signing, as a strip after the link would). An x86_64 binary needs none (zig
// signs only arm64 ones); a signature it does carry must match too.
import { readFileSync, statSync } from "node:fs";
import { createHash } from "node:crypto";

// Every one ships with macOS (in the dyld shared cache since macOS 11):
// libSystem is the C library; the `libc` crate links libiconv, whose stub
// re-exports libcharset, and zig's linker names that one too.
export const SYSTEM_DYLIBS = [
  "/usr/lib/libSystem.B.dylib",
  "/usr/lib/libiconv.2.dylib",
  "/usr/lib/libcharset.1.dylib",
];
export const MIN_MACOS = "11.0.0";

const CPU = { x86_64: 0x01000007, arm64: 0x0100000c };
const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 2;
const MH_PIE = 0x200000;
const LC = {
  SEGMENT_64: 0x19,
  LOAD_DYLIB: 0xc,
  LOAD_WEAK_DYLIB: 0x80000018,
  REEXPORT_DYLIB: 0x8000001f,
  LAZY_LOAD_DYLIB: 0x20,
  LOAD_UPWARD_DYLIB: 0x80000023,
  LOAD_DYLINKER: 0xe,
  MAIN: 0x80000028,
  BUILD_VERSION: 0x32,
  VERSION_MIN_MACOSX: 0x24,
  CODE_SIGNATURE: 0x1d,
  RPATH: 0x8000001c,
};
const DYLIB_CMDS = new Set([LC.LOAD_DYLIB, LC.LOAD_WEAK_DYLIB, LC.REEXPORT_DYLIB, LC.LAZY_LOAD_DYLIB, LC.LOAD_UPWARD_DYLIB]);
const PLATFORM_MACOS = 1;

function cstr(buf, at, end) {
  let z = buf.indexOf(0, at);
  if (z < 0 || z > end) z = end;
  return buf.toString("utf8", at, z);
}

// X.Y.Z as Mach-O packs it: xxxx.yy.zz in nibbles.
function version(v) {
  return `${v >>> 16}.${(v >>> 8) & 0xff}.${v & 0xff}`;
}
function versionNumber(s) {
  const [a = 0, b = 0, c = 0] = s.split(".").map(Number);
  return (a << 16) | (b << 8) | c;
}

// The ad-hoc signature: a big-endian SuperBlob whose CodeDirectory holds one
// hash per page of the file up to codeLimit (where the signature starts).
function checkSignature(buf, dataoff, datasize, problems, info) {
  if (dataoff + datasize > buf.length) return problems.push("the code signature runs past the end of the file");
  const sb = buf.subarray(dataoff, dataoff + datasize);
  if (sb.readUInt32BE(0) !== 0xfade0cc0) return problems.push("the code signature is not a SuperBlob");
  const count = sb.readUInt32BE(8);
  let cd = null;
  for (let i = 0; i < count; i++) {
    const type = sb.readUInt32BE(12 + 8 * i);
    const off = sb.readUInt32BE(16 + 8 * i);
    if (type === 0 && sb.readUInt32BE(off) === 0xfade0c02) cd = sb.subarray(off);
  }
  if (!cd) return problems.push("the code signature has no CodeDirectory");
  const flags = cd.readUInt32BE(12);
  const hashOffset = cd.readUInt32BE(16);
  const nCodeSlots = cd.readUInt32BE(28);
  const codeLimit = cd.readUInt32BE(32);
  const hashSize = cd.readUInt8(36);
  const hashType = cd.readUInt8(37);
  const pageSize = 2 ** cd.readUInt8(39);
  const algo = { 1: "sha1", 2: "sha256" }[hashType];
  info.signature = { adhoc: (flags & 0x2) !== 0, hash: algo, pageSize, pages: nCodeSlots, codeLimit };
  if (!algo) return problems.push(`the CodeDirectory uses hash type ${hashType}`);
  if (codeLimit !== dataoff) problems.push(`the signature covers ${codeLimit} bytes, but it starts at ${dataoff}`);
  if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) problems.push(`the signature has ${nCodeSlots} page hashes for ${codeLimit} bytes`);
  let bad = 0;
  for (let i = 0; i < nCodeSlots; i++) {
    const page = buf.subarray(i * pageSize, Math.min((i + 1) * pageSize, codeLimit));
    const want = cd.subarray(hashOffset + i * hashSize, hashOffset + (i + 1) * hashSize);
    const got = createHash(algo).update(page).digest().subarray(0, hashSize);
    if (!got.equals(want)) bad++;
  }
  if (bad) problems.push(`${bad} of ${nCodeSlots} pages do not match the code signature (the file changed after it was signed)`);
}

export function checkMachO(path, arch) {
  const problems = [];
  const info = { path, dylibs: [], rpaths: [] };
  if (!(arch in CPU)) return { problems: [`unknown CPU ${arch} (x86_64 or arm64)`], info };
  const mode = statSync(path).mode;
  if ((mode & 0o111) !== 0o111) problems.push(`not executable by everyone (mode ${(mode & 0o777).toString(8)})`);
  const buf = readFileSync(path);
  if (buf.length < 32 || buf.readUInt32LE(0) !== MH_MAGIC_64) {
    const m = buf.length >= 4 ? buf.readUInt32BE(0).toString(16) : "none";
    return { problems: [...problems, `not a thin 64-bit little-endian Mach-O file (magic ${m})`], info };
  }
  const cputype = buf.readUInt32LE(4);
  const filetype = buf.readUInt32LE(12);
  const ncmds = buf.readUInt32LE(16);
  const flags = buf.readUInt32LE(24);
  info.cpu = Object.keys(CPU).find((k) => CPU[k] === cputype) ?? `0x${cputype.toString(16)}`;
  if (cputype !== CPU[arch]) problems.push(`CPU type is ${info.cpu}, not ${arch}`);
  if (filetype !== MH_EXECUTE) problems.push(`file type ${filetype}, not an executable (MH_EXECUTE)`);
  if (!(flags & MH_PIE)) problems.push("not position-independent (no MH_PIE)");
  let at = 32;
  let main = false;
  let sig = null;
  for (let i = 0; i < ncmds; i++) {
    const cmd = buf.readUInt32LE(at);
    const size = buf.readUInt32LE(at + 4);
    const end = at + size;
    if (DYLIB_CMDS.has(cmd)) info.dylibs.push(cstr(buf, at + buf.readUInt32LE(at + 8), end));
    else if (cmd === LC.LOAD_DYLINKER) info.dylinker = cstr(buf, at + buf.readUInt32LE(at + 8), end);
    else if (cmd === LC.RPATH) info.rpaths.push(cstr(buf, at + buf.readUInt32LE(at + 8), end));
    else if (cmd === LC.MAIN) main = true;
    else if (cmd === LC.BUILD_VERSION) {
      info.platform = buf.readUInt32LE(at + 8);
      info.minos = version(buf.readUInt32LE(at + 12));
    } else if (cmd === LC.VERSION_MIN_MACOSX) {
      info.platform = PLATFORM_MACOS;
      info.minos = version(buf.readUInt32LE(at + 8));
    } else if (cmd === LC.CODE_SIGNATURE) sig = [buf.readUInt32LE(at + 8), buf.readUInt32LE(at + 12)];
    at = end;
  }
  if (!main) problems.push("no LC_MAIN: not a program dyld can start");
  if (info.dylinker !== "/usr/lib/dyld") problems.push(`dynamic linker is ${info.dylinker}, not /usr/lib/dyld`);
  if (info.platform !== PLATFORM_MACOS) problems.push(`built for platform ${info.platform}, not macOS (1)`);
  else if (versionNumber(info.minos) > versionNumber(MIN_MACOS)) problems.push(`needs macOS ${info.minos}; the bundle promises ${MIN_MACOS}`);
  if (!info.dylibs.includes("/usr/lib/libSystem.B.dylib")) problems.push("not linked against /usr/lib/libSystem.B.dylib");
  for (const d of info.dylibs) if (!SYSTEM_DYLIBS.includes(d)) problems.push(`linked against ${d}, which is not one of the system libraries ${SYSTEM_DYLIBS.join(", ")}`);
  if (info.rpaths.length) problems.push(`has run paths (LC_RPATH ${info.rpaths.join(", ")})`);
  if (sig) checkSignature(buf, sig[0], sig[1], problems, info);
  else if (arch === "arm64") problems.push("no code signature (Apple silicon runs signed arm64 code only)");
  else info.signature = null;
  return { problems, info };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, arch] = process.argv.slice(2);
  if (!file || !arch) {
    console.error("usage: node dist/macho.mjs FILE x86_64|arm64");
    process.exit(2);
  }
  const { problems, info } = checkMachO(file, arch);
  console.log(JSON.stringify(info));
  for (const p of problems) console.error(`macho: ${file}: ${p}`);
  process.exit(problems.length ? 1 : 0);
}
