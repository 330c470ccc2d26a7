// NATS subject wildcards (`*` one token, `>` one or more trailing tokens) for the in-process bus.

// A process publishes and filters on a handful of subjects, each many thousands of times a
// second: each answer is worked out once. Bounded, in case subjects carry ids.
const answers = new Map<string, Map<string, boolean>>();
const MAX_SUBJECTS_PER_PATTERN = 4_096;

export function subjectMatches(pattern: string, subject: string): boolean {
  let known = answers.get(pattern);
  if (known === undefined) answers.set(pattern, (known = new Map()));
  let answer = known.get(subject);
  if (answer === undefined) {
    if (known.size >= MAX_SUBJECTS_PER_PATTERN) known.clear();
    known.set(subject, (answer = matches(pattern, subject)));
  }
  return answer;
}

function matches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return p.length === s.length;
}

export function matchesAny(patterns: readonly string[] | undefined, subject: string): boolean {
  return !patterns || patterns.length === 0 || patterns.some((p) => subjectMatches(p, subject));
}

/** Whether some subject could match both patterns; NATS refuses streams whose subjects overlap. */
export function subjectsOverlap(a: string, b: string): boolean {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const tx = x[i];
    const ty = y[i];
    if (tx === ">" || ty === ">") return tx !== undefined && ty !== undefined;
    if (tx === undefined || ty === undefined) return false;
    if (tx !== "*" && ty !== "*" && tx !== ty) return false;
  }
  return true;
}

const validSubjects = new Set<string>();

export function assertValidSubject(subject: string): void {
  if (validSubjects.has(subject)) return;
  if (!subject || subject.split(".").some((t) => t === "" || t === "*" || t === ">" || /\s/.test(t))) {
    throw new Error(`invalid subject "${subject}": publish to a concrete subject such as <service>.v1.<entity>.<verb>`);
  }
  if (validSubjects.size >= MAX_SUBJECTS_PER_PATTERN) validSubjects.clear();
  validSubjects.add(subject);
}
