// A bundled list of common passwords of at least 12 characters (shorter ones fail the length rule
// anyway), compared after lower-casing. Drawn from the patterns that top public breach lists:
// keyboard walks, digit runs, words with digits appended.
const LIST = `
password1234 password12345 password123456 password1234567 passwordpassword password123!
123456789012 1234567890123 12345678901234 123456789123 123123123123 111111111111 000000000000
qwertyuiop123 qwertyuiop12 qwertyuiopasdf qwertyuiop1234 1qaz2wsx3edc 1q2w3e4r5t6y qwerty123456
qwertyqwerty asdfghjkl123 zxcvbnm12345 abcdefghijkl abc123abc123 abcd1234abcd iloveyou1234
letmein12345 welcome12345 welcome123456 admin1234567 administrator changeme1234 trustno112345
football1234 baseball1234 sunshine1234 princess1234 monkey123456 dragon123456 master123456
superman1234 starwars1234 whatever1234 computer1234 internet1234 michael12345 jennifer1234
passw0rd1234 p@ssw0rd1234 p@ssword1234 password2024 password2025 password2026 summer202420
`;

export const commonPasswords: ReadonlySet<string> = new Set(LIST.split(/\s+/).filter(Boolean));
