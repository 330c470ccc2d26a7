// The captured output of a child process, capped at `Tools:MaxOutputChars`. `head` keeps the first
// characters (run_command, git, code: the answer of a finished run); `tail` keeps the last ones and
// counts everything ever written, so an exec session can be polled for what is new since a mark.

export class OutputBuffer {
  private text = "";
  /** Characters written in all (tail mode: the offset just past the last character). */
  written = 0;
  truncated = false;

  constructor(
    readonly maxChars: number,
    readonly keep: "head" | "tail" = "head",
  ) {}

  append(chunk: string): void {
    this.written += chunk.length;
    if (this.keep === "head") {
      const room = this.maxChars - this.text.length;
      if (chunk.length > room) {
        this.truncated = true;
        if (room > 0) this.text += chunk.slice(0, room);
      } else this.text += chunk;
      return;
    }
    this.text += chunk;
    if (this.text.length > this.maxChars) {
      this.truncated = true;
      this.text = this.text.slice(this.text.length - this.maxChars);
    }
  }

  get output(): string {
    return this.text;
  }

  /** Tail mode: the text written since offset `mark` that is still kept (and whether some was lost). */
  since(mark: number): { text: string; lost: boolean } {
    const start = this.written - this.text.length;
    if (mark >= start) return { text: this.text.slice(mark - start), lost: false };
    return { text: this.text, lost: true };
  }
}
