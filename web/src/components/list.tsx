/**
 * Lists of a person's things (agents, sites, files, schedules, memories, teams, plans): a named list of cards, or
 * the words for none (`ItemList`); a card with its heading, what is beside it, its text and its buttons (`ItemCard`);
 * and the line a page shows where there is nothing yet (`EmptyState`).
 */
import type { ComponentChildren } from 'preact';

/** The line where a list or a table has nothing to show: what is missing, and often how to add one. */
export function EmptyState({ children }: { children: ComponentChildren }) {
  return <p class="muted">{children}</p>;
}

/** A small label beside a heading: a kind, a state ("built-in", "paused", "your plan"). */
export function Badge({ children }: { children: ComponentChildren }) {
  return <span class="badge">{children}</span>;
}

/**
 * `items` as a list named `label`, each drawn by `children` (an `ItemCard`, keyed), or `empty` when there are
 * none. `grid` lays the cards out in columns as wide as the screen allows; `ordered` when the order means something
 * (search results, best first).
 */
export function ItemList<T>(props: {
  label: string;
  items: readonly T[];
  empty?: ComponentChildren;
  grid?: boolean;
  ordered?: boolean;
  children(item: T, index: number): ComponentChildren;
}) {
  if (props.items.length === 0) return props.empty ? <EmptyState>{props.empty}</EmptyState> : null;
  const List = props.ordered ? 'ol' : 'ul';
  return (
    <List class={props.grid ? 'grid list' : 'list'} aria-label={props.label}>
      {props.items.map((item, index) => props.children(item, index))}
    </List>
  );
}

/**
 * One item of an `ItemList`: its title (an h3, so a list is browsable by heading) with `aside` beside it (a badge,
 * a link, a size), then `children`, the `actions` in a row, and `footer` below them (an action's error, a panel
 * the card opened).
 */
export function ItemCard(props: {
  title?: ComponentChildren;
  aside?: ComponentChildren;
  children?: ComponentChildren;
  actions?: ComponentChildren;
  footer?: ComponentChildren;
  testId?: string;
}) {
  return (
    <li data-testid={props.testId}>
      {props.title !== undefined ? (
        <div class="item-head">
          <h3>{props.title}</h3>
          {props.aside}
        </div>
      ) : null}
      {props.children}
      {props.actions ? <div class="button-row">{props.actions}</div> : null}
      {props.footer}
    </li>
  );
}
