// CPU time of the calling process's main thread, from /proc/self/task/<pid>/stat (Linux; 10 ms ticks).
// Node 20 has no per-thread CPU API (process.threadCpuUsage arrives in Node 23.9). The file stays open
// and is re-read with pread: about 7 us per reading. Elsewhere the whole process's CPU is the fallback.

import { closeSync, openSync, readSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ = 100 on Linux
let fd: number | null | undefined;
const buf = Buffer.alloc(1024);

function openStat(): number | null {
  try {
    return openSync(`/proc/self/task/${process.pid}/stat`, 'r');
  } catch {
    return null;
  }
}

/** Main-thread CPU time (user + system) in ms since the process started. */
export function mainThreadCpuMs(): number {
  if (fd === undefined) fd = openStat();
  if (fd !== null) {
    try {
      const n = readSync(fd, buf, 0, buf.length, 0);
      const text = buf.toString('latin1', 0, n);
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime (fields 14, 15 of stat)
    } catch {
      closeSync(fd);
      fd = null;
    }
  }
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
