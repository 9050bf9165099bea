// Synthetic knowledge base for search QA: countries, cities, and "clusters" of one person and the
// company they founded. Every name is a seeded combination of name parts (countries: one of a fixed set;
// cities: prefix + ending; people: first name + surname; companies: prefix + root + the kind's suffix), so
// the same seed gives the same world and, like real names, each name is built from parts seen in many
// other names. A probe found the 1m base copies a known part but not novel letter soup: with seeded
// syllable names it copied the first two letters of an entity or answer and invented the rest.
// A cluster is the underlying item the splits are disjoint by (its person and company are only ever
// asked about in one split); cities and countries are shared scenery, like common nouns.
import { Rng } from '../../common/rng';

export interface Country { id: string; name: string; capitalCityId: string }
export interface City { id: string; name: string; countryId: string }
export interface Person { id: string; name: string; job: string; bornCityId: string }
export interface Company { id: string; name: string; kind: string; cityId: string; year: number; founderId: string }
export interface Cluster { id: string; person: Person; company: Company }

export interface KnowledgeBase {
  countries: Country[];
  cities: City[];
  clusters: Cluster[];
}

export interface KnowledgeBaseOptions {
  seed: string;
  countries: number;
  cities: number;
  clusters: number;
}

export const DEFAULT_KB_OPTIONS: KnowledgeBaseOptions = { seed: 'whale-search-qa-kb-v1', countries: 24, cities: 160, clusters: 3000 };

const COUNTRY_NAMES = [
  'Avonia', 'Belland', 'Carrow', 'Dalmark', 'Esterra', 'Farland', 'Galdor', 'Hestia', 'Istria', 'Jorvik',
  'Kalmar', 'Lorren', 'Marevia', 'Nordia', 'Ostmark', 'Pellor', 'Quenia', 'Rovenia', 'Sarnia', 'Tarvos',
  'Ulmar', 'Varna', 'Wessia', 'Zemlia',
];
const CITY_PREFIXES = ['Alder', 'Bram', 'Carn', 'Dun', 'Fen', 'Glen', 'Hal', 'Kel', 'Lan', 'Mel', 'Nor', 'Pem', 'Sel', 'Tal', 'Wen', 'Yar'];
const CITY_ENDINGS = ['bay', 'by', 'ham', 'mouth', 'ley', 'more', 'stead', 'thorpe', 'wyn', 'caster'];
const FIRST_NAMES = [
  'Adam', 'Alice', 'Anna', 'Ben', 'Clara', 'Daniel', 'David', 'Edith', 'Emma', 'Frank', 'George', 'Grace',
  'Hannah', 'Harry', 'Helen', 'Henry', 'Isaac', 'Jack', 'James', 'Jane', 'John', 'Julia', 'Kate', 'Laura',
  'Leo', 'Lily', 'Lucy', 'Mark', 'Martha', 'Mary', 'Max', 'Nora', 'Oliver', 'Paul', 'Peter', 'Rose',
  'Ruth', 'Sam', 'Sarah', 'Simon', 'Sophie', 'Thomas', 'Tom', 'Victor', 'Walter', 'William',
];
const SURNAMES = [
  'Adams', 'Allen', 'Bailey', 'Barnes', 'Bell', 'Bennett', 'Brooks', 'Brown', 'Bryant', 'Butler', 'Campbell',
  'Carter', 'Clark', 'Collins', 'Cook', 'Cooper', 'Cox', 'Davies', 'Dawson', 'Dixon', 'Edwards', 'Ellis',
  'Evans', 'Fisher', 'Fleming', 'Foster', 'Gibson', 'Graham', 'Gray', 'Griffin', 'Hall', 'Harris',
  'Hayes', 'Hill', 'Holmes', 'Howard', 'Hughes', 'Hunt', 'Jackson', 'Jenkins', 'Johnson', 'Jones',
  'Kelly', 'Kennedy', 'King', 'Knight', 'Lambert', 'Lawson', 'Lewis', 'Lloyd', 'Marsh', 'Martin', 'Mason',
  'Miller', 'Moore', 'Morgan', 'Morris', 'Murphy', 'Murray', 'Nelson', 'Newman', 'Owen', 'Palmer',
  'Parker', 'Pearce', 'Perry', 'Phillips', 'Porter', 'Powell', 'Price', 'Reed', 'Reid', 'Reynolds',
  'Richards', 'Roberts', 'Robinson', 'Rogers', 'Ross', 'Russell', 'Scott', 'Shaw', 'Simpson', 'Stevens',
  'Sullivan', 'Taylor', 'Thompson', 'Turner', 'Walker', 'Wallace', 'Ward', 'Watson', 'Webb',
  'Wells', 'Wilson', 'Wood', 'Wright', 'Young',
];
const COMPANY_PREFIXES = [
  'Silver', 'Gold', 'Oak', 'Pine', 'Elm', 'Ash', 'Red', 'Green', 'Black', 'White', 'North', 'South', 'East',
  'West', 'Stone', 'Iron', 'Copper', 'River', 'Lake', 'Sun', 'Moon', 'Star', 'Fox', 'Bear', 'Wolf', 'Hawk',
  'Rose', 'Maple', 'Cedar', 'Bright',
];
const COMPANY_ROOTS = [
  'brook', 'field', 'ford', 'wood', 'stone', 'gate', 'bridge', 'hill', 'dale', 'haven', 'port', 'well',
  'marsh', 'ridge', 'crest', 'vale', 'wick', 'moor', 'bury', 'ton',
];
const JOBS = ['baker', 'painter', 'pilot', 'doctor', 'farmer', 'singer', 'poet', 'sailor', 'judge', 'tailor', 'potter', 'chef'];
const COMPANY_KINDS: ReadonlyArray<[kind: string, suffix: string]> = [
  ['bakery', 'Bakes'], ['bank', 'Bank'], ['studio', 'Studio'], ['mill', 'Mills'], ['press', 'Press'],
  ['shipyard', 'Yards'], ['brewery', 'Brews'], ['workshop', 'Works'], ['theatre', 'Stage'], ['farm', 'Farms'],
];

/** Draws names until one is unused; every entity name in the world is unique (case-insensitive). */
function uniqueName(rng: Rng, used: Set<string>, make: () => string): string {
  for (let tries = 0; tries < 10_000; tries++) {
    const name = make();
    const key = name.toLowerCase();
    if (!used.has(key) && name.length <= 18) {
      used.add(key);
      return name;
    }
  }
  throw new Error('knowledge base: ran out of unique names; lower the entity counts (at most 24 countries and 160 cities) or add name parts');
}

export function generateKnowledgeBase(options: KnowledgeBaseOptions = DEFAULT_KB_OPTIONS): KnowledgeBase {
  const rng = new Rng(options.seed);
  const used = new Set<string>();
  const countries: Country[] = [];
  const cities: City[] = [];
  for (let i = 0; i < options.countries; i++) {
    countries.push({ id: `country${i}`, name: uniqueName(rng, used, () => rng.pick(COUNTRY_NAMES)), capitalCityId: '' });
  }
  for (let i = 0; i < options.cities; i++) {
    const country = i < options.countries ? countries[i] : rng.pick(countries);
    const city: City = { id: `city${i}`, name: uniqueName(rng, used, () => `${rng.pick(CITY_PREFIXES)}${rng.pick(CITY_ENDINGS)}`), countryId: country.id };
    if (country.capitalCityId === '') country.capitalCityId = city.id;
    cities.push(city);
  }
  // Names share their parts across clusters on purpose: BM25 then returns near misses.
  const clusters: Cluster[] = [];
  for (let i = 0; i < options.clusters; i++) {
    const person: Person = {
      id: `person${i}`,
      name: uniqueName(rng, used, () => `${rng.pick(FIRST_NAMES)} ${rng.pick(SURNAMES)}`),
      job: rng.pick(JOBS),
      bornCityId: rng.pick(cities).id,
    };
    const [kind, suffix] = rng.pick(COMPANY_KINDS);
    const company: Company = {
      id: `company${i}`,
      name: uniqueName(rng, used, () => `${rng.pick(COMPANY_PREFIXES)}${rng.pick(COMPANY_ROOTS)} ${suffix}`),
      kind,
      cityId: rng.pick(cities).id,
      year: rng.int(1801, 1999),
      founderId: person.id,
    };
    clusters.push({ id: `cluster${i}`, person, company });
  }
  return { countries, cities, clusters };
}

/** Lookup tables over a knowledge base. */
export class KnowledgeIndex {
  readonly city = new Map<string, City>();
  readonly country = new Map<string, Country>();
  constructor(readonly kb: KnowledgeBase) {
    for (const c of kb.cities) this.city.set(c.id, c);
    for (const c of kb.countries) this.country.set(c.id, c);
  }
  cityOf(id: string): City {
    const c = this.city.get(id);
    if (!c) throw new Error(`knowledge base: unknown city id ${id}`);
    return c;
  }
  countryOf(id: string): Country {
    const c = this.country.get(id);
    if (!c) throw new Error(`knowledge base: unknown country id ${id}`);
    return c;
  }
}
