// The practice area a matter is about, and how urgent it sounds, from keywords.

export type Urgency = 'low' | 'normal' | 'high' | 'urgent';

const CASE_TYPES: ReadonlyArray<readonly [string, RegExp]> = [
  ['Workers Compensation', /\bworkers['’]?\s*comp|\b(?:injured|hurt)\s+(?:at|on)\s+(?:work|the job)\b/],
  ['Medical Malpractice', /\bmalpractice\b|\bmisdiagnos|\bsurgical (?:error|mistake)/],
  [
    'Criminal Defense',
    /\b(?:arrest(?:ed)?|criminal|charged with|dui|dwi|felony|misdemeanou?r|probation|warrant|in jail|in custody)\b/,
  ],
  [
    'Personal Injury',
    /\b(?:accident|injury|injuries|injured|crash|collision|slip(?:ped)? and fell|slip and fall|dog bite|whiplash|wreck|personal injury)\b/,
  ],
  [
    'Family Law',
    /\b(?:divorce|custody|child support|alimony|separation|adoption|visitation|prenup(?:tial)?|family law)\b/,
  ],
  [
    'Employment',
    /\b(?:fired|wrongful(?:ly)? terminat\w*|terminated|harass\w*|discriminat\w*|overtime|unpaid wages|employer|employment)\b/,
  ],
  ['Immigration', /\b(?:visa|green card|deport\w*|asylum|immigration|citizenship|naturali[sz]ation)\b/],
  [
    'Estate Planning',
    /\b(?:probate|estate|inheritance|living trust|power of attorney|(?:a|my|her|his) will)\b|\bwills\b/,
  ],
  ['Landlord-Tenant', /\b(?:evict\w*|landlord|tenant|lease)\b/],
  ['Bankruptcy', /\b(?:bankrupt\w*|debt collectors?|creditors?|foreclos\w*)\b/],
];

/** The practice area that free text is about, or null when no keyword matches. */
export function classifyCaseType(text: string): string | null {
  const t = text.toLowerCase();
  for (const [label, pattern] of CASE_TYPES) if (pattern.test(t)) return label;
  return null;
}

const URGENT = [
  /\barrest(?:ed)?\b/,
  /\bin (?:jail|custody)\b/,
  /\bemergency\b/,
  /\b(?:court|hearing|trial|court date)\b[^.!?]{0,40}\b(?:today|tonight|tomorrow)\b/,
  /\b(?:today|tonight|tomorrow)\b[^.!?]{0,40}\b(?:court|hearing|trial)\b/,
  /\b(?:being|getting) deported\b/,
];
const HIGH = [
  /\bdeadlines?\b/,
  /\bcourt date\b/,
  /\bhearing\b/,
  /\b(?:served|subpoena\w*|summons)\b/,
  /\beviction\b|\bbeing evicted\b/,
  /\burgent(?:ly)?\b/,
  /\basap\b|\bas soon as possible\b/,
  /\bthis week\b/,
  /\bstatute of limitations\b/,
];
const LOW = [
  /\bno (?:rush|hurry)\b/,
  /\bnot (?:urgent|an emergency|in a hurry|time[- ]sensitive)\b/,
  /\bjust (?:curious|wondering|exploring|browsing)\b/,
  /\bgeneral question\b/,
  /\bplanning ahead\b/,
  /\bwhenever (?:is )?convenient\b/,
];

/** Urgency from keywords; negated phrases ("not urgent", "no emergency") lower it rather than raise it. */
export function classifyUrgency(text: string): Urgency {
  let t = text.toLowerCase();
  let low = false;
  for (const pattern of LOW) {
    const global = new RegExp(pattern.source, 'g');
    if (global.test(t)) low = true;
    t = t.replace(global, ' ');
  }
  t = t.replace(/\b(?:no|not an?|isn['’]t an?|nothing)\s+(?:emergency|urgent)\b/g, () => {
    low = true;
    return ' ';
  });
  if (URGENT.some((p) => p.test(t))) return 'urgent';
  if (HIGH.some((p) => p.test(t))) return 'high';
  return low ? 'low' : 'normal';
}

/** An urgency as a person or a model wrote it ("medium", "critical", ...), in our four levels. */
export function urgencyValue(value: string): Urgency | null {
  const v = value.trim().toLowerCase();
  if (v === 'low' || v === 'normal' || v === 'high' || v === 'urgent') return v;
  if (v === 'medium' || v === 'moderate') return 'normal';
  if (v === 'critical' || v === 'emergency' || v === 'immediate') return 'urgent';
  return null;
}
