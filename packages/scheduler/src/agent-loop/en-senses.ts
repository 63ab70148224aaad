/**
 * English words of service requests and the words tools describe the same thing by ("left" and
 * "remains", "crushed" and "damaged"), read as one more sense of the request's word.
 */
export const EN_SENSES: Readonly<Record<string, string>> = {
  left: 'remain remaining',
  remaining: 'remain left',
  cost: 'price fee',
  cheap: 'price cost',
  cheapest: 'price cost',
  cheaper: 'price cost',
  expensive: 'price cost',
  price: 'cost fee',
  broken: 'damaged damage',
  crushed: 'damaged damage',
  smashed: 'damaged damage',
  cracked: 'damaged damage',
  torn: 'damaged damage',
  damaged: 'broken damage',
  lost: 'missing',
  missing: 'lost',
  delayed: 'late delay',
  arrived: 'delivery delivered',
  downgrade: 'change switch',
  upgrade: 'change switch',
};
