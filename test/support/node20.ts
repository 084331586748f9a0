// vitest 5 reports failures with Map.groupBy / Object.groupBy, which Node 20 lacks.
const groupBy = <K, V>(items: Iterable<V>, key: (item: V, index: number) => K) => {
  const groups = new Map<K, Array<V>>()
  let index = 0
  for (const item of items) {
    const k = key(item, index++)
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return groups
}
const maps = Map as unknown as { groupBy?: typeof groupBy }
maps.groupBy ??= groupBy
const objects = Object as unknown as {
  groupBy?: (items: Iterable<unknown>, key: (item: unknown, i: number) => PropertyKey) => object
}
objects.groupBy ??= (items, key) => Object.fromEntries(groupBy(items, key))
