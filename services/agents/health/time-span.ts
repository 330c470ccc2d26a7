// Durations as the health report writes them: `hh:mm:ss.fffffff` (a .NET TimeSpan's constant
// format, 100 ns ticks), with days added as `d.` in front past 24 hours.

export function formatTimeSpan(milliseconds: number): string {
  const ticks = Math.max(0, Math.round(milliseconds * 10_000));
  const fraction = ticks % 10_000_000;
  let seconds = Math.floor(ticks / 10_000_000);
  const days = Math.floor(seconds / 86_400);
  seconds -= days * 86_400;
  const hh = Math.floor(seconds / 3600);
  const mm = Math.floor((seconds % 3600) / 60);
  const ss = seconds % 60;
  const two = (n: number) => String(n).padStart(2, "0");
  return `${days > 0 ? `${days}.` : ""}${two(hh)}:${two(mm)}:${two(ss)}.${String(fraction).padStart(7, "0")}`;
}
